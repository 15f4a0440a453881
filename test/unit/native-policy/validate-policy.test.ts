import assert from 'node:assert/strict';
import {
  activation,
  compile,
  createCostBudget,
  evaluatedVariables,
  type CelProgram,
} from '../../../server/cel/index.js';
import type { NativePolicySpec } from '../../../server/native-policy/native-objects.js';
import { MAX_MESSAGE_EXPRESSION_BYTES, validatePolicy } from '../../../server/native-policy/validate-policy.js';

function program(expression: string): CelProgram {
  const result = compile(expression, { variables: ['name'] });
  if (!result.ok) throw new Error(result.error.message);
  return result.program;
}

const spec = (fields: Partial<NativePolicySpec>): NativePolicySpec => ({
  matchConditions: [],
  variables: [],
  validations: [],
  auditAnnotations: [],
  ...fields,
});

const values = activation({ object: { metadata: { name: 'web', labels: { app: 'web' } }, spec: {} } });

describe('validatePolicy(): one policy, as the apiserver’s validator evaluates it', function () {
  it('has nothing to say when a matchCondition is false, even beside one that fails', function () {
    const conditions = [
      { name: 'fails', program: program('object.spec.missing == 1') },
      { name: 'false', program: program("object.metadata.name == 'api'") },
    ];
    const s = spec({ matchConditions: conditions, validations: [{ program: program('false'), reason: 'Invalid' }] });
    assert.deepEqual(validatePolicy(s, 'Fail', values, createCostBudget()), { decisions: [], annotations: [] });
  });

  it('evaluates every validation: each false one and each that fails under Fail is a decision', function () {
    const s = spec({
      validations: [
        { program: program("object.metadata.name == 'api'"), message: '  not api  ', reason: 'Forbidden' },
        { program: program('object.spec.replicas > 1'), reason: 'Invalid' },
        { program: program('size(object.metadata.name) > 10'), reason: 'Invalid' },
      ],
    });
    assert.deepEqual(validatePolicy(s, 'Fail', values, createCostBudget()).decisions, [
      { evaluation: 'deny', message: 'not api', reason: 'Forbidden', index: 0 },
      {
        evaluation: 'error',
        message: "expression 'object.spec.replicas > 1' resulted in error: no such key: replicas",
        reason: 'Invalid',
        index: 1,
      },
      {
        evaluation: 'deny',
        message: 'failed expression: size(object.metadata.name) > 10',
        reason: 'Invalid',
        index: 2,
      },
    ]);
    // Under Ignore the failure is no decision at all.
    assert.deepEqual(
      validatePolicy(s, 'Ignore', values, createCostBudget()).decisions.map((d) => d.index),
      [0, 2],
    );
  });

  it('publishes a trimmed audit annotation, none for null or blank, and an error for another type', function () {
    const s = spec({
      auditAnnotations: [
        { key: 'app', program: program("' ' + object.metadata.labels.app + ' '") },
        { key: 'none', program: program('null') },
        { key: 'blank', program: program("'  '") },
        { key: 'count', program: program('size(object.metadata.labels)') },
      ],
    });
    const { variables: _variables, ...result } = validatePolicy(s, 'Ignore', values, createCostBudget());
    assert.deepEqual(result, {
      decisions: [
        {
          evaluation: 'error',
          message:
            "valueExpression 'size(object.metadata.labels)' resulted in unsupported return type: int. Return type must be either string or null.",
          reason: 'Invalid',
          index: 0,
        },
      ],
      annotations: [{ key: 'app', value: 'web' }],
    });
  });

  it('names, for the decision trace, the first validation that did not hold or failed, and keeps the variables', function () {
    const s = spec({
      variables: [{ name: 'name', program: program('object.metadata.labels.app') }],
      validations: [
        { program: program("variables.name == 'web'"), reason: 'Invalid' },
        { program: program('object.metadata.missing == 1'), reason: 'Invalid' },
        { program: program('false'), reason: 'Invalid' },
      ],
    });
    const failed = validatePolicy(s, 'Fail', values, createCostBudget());
    assert.deepEqual(failed.decidedBy, { list: 'validations', index: 1 });
    assert.equal(failed.failure?.code, 'no_such_key');
    assert.deepEqual(evaluatedVariables(failed.variables!).get('name'), { ok: true, value: 'web', cost: 4 });

    const held = validatePolicy(
      spec({ validations: [{ program: program('true'), reason: 'Invalid' }] }),
      'Fail',
      values,
      createCostBudget(),
    );
    assert.equal(held.decidedBy, undefined);
    assert.equal(held.failure, undefined);
  });

  it('takes a messageExpression’s trimmed result, else the message, as the apiserver does', function () {
    const failing = (messageExpression: string) => ({
      program: program('false'),
      message: 'the message',
      messageProgram: program(messageExpression),
      reason: 'Invalid' as const,
    });
    const s = spec({
      variables: [{ name: 'name', program: program('object.metadata.name') }],
      validations: [
        failing("'  name ' + variables.name + '  '"),
        failing("'two\\nlines'"),
        failing(`'${'x'.repeat(MAX_MESSAGE_EXPRESSION_BYTES + 1)}'`),
        failing('object.spec.missing'),
        failing("'   '"),
      ],
    });
    assert.deepEqual(
      validatePolicy(s, 'Fail', values, createCostBudget()).decisions.map((d) => d.message),
      ['name web', 'the message', 'the message', 'the message', 'the message'],
    );
  });
});
