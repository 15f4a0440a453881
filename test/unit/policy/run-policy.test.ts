import assert from 'node:assert/strict';
import type { AdmissionRequest } from '../../../server/admission/types.js';
import { StepFailedError } from '../../../server/base/errors.js';
import type { PolicyEntry } from '../../../server/config/types.js';
import { policyOutcome, type PolicyInvocation } from '../../../server/policy/run-policy.js';
import { parseConfig } from '../../helpers/config.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';

const MATCH =
  "    match: { rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] } ] }\n";

/** The specs of a chain of policy entries, each written as the YAML after its `policy:` and match. */
function specs(...bodies: string[]): PolicyEntry['spec'][] {
  const yaml = `chain:\n${bodies.map((b, i) => `  - policy: p${i}\n${MATCH}${b}`).join('')}`;
  return parseConfig(yaml).chain.map((e) => (e.kind === 'policy' ? e.spec : assert.fail('not a policy')));
}

function invocation(request: AdmissionRequest = requestOf(podCreate())): PolicyInvocation & {
  annotations: [string, string][];
} {
  const annotations: [string, string][] = [];
  return {
    request,
    plainObject: request.object ?? undefined,
    annotate: (key, value) => annotations.push([key, value]),
    annotations,
  };
}

const run = (body: string, inv = invocation()) => policyOutcome(specs(body)[0]!, inv);

describe('policyOutcome()', () => {
  it('allows when every validation holds', () => {
    assert.deepEqual(run('    validations: [{ expression: "object.kind == \'Pod\'" }]\n'), { allowed: true });
  });

  it('refuses with the first false validation, by its reason', () => {
    const reasons = { Invalid: 422, Forbidden: 403, Unauthorized: 401, RequestEntityTooLarge: 413 };
    for (const [reason, code] of Object.entries(reasons)) {
      const decision = run(
        `    validations:\n      - { expression: "true", message: first }\n      - { expression: "false", message: second, reason: ${reason} }\n      - { expression: "false", message: third }\n`,
      );
      assert.deepEqual(decision, { allowed: false, message: 'second', code }, reason);
    }
  });

  it('refuses as Invalid with "failed expression" when the validation has no message', () => {
    assert.deepEqual(run('    validations: [{ expression: "1 > 2" }]\n'), {
      allowed: false,
      message: 'failed expression: 1 > 2',
      code: 422,
    });
  });

  it('falls back to message when messageExpression fails or gives a blank or multi-line string', () => {
    for (const messageExpression of ["object.missing + 'x'", "'  '", "'a\\nb'"]) {
      const decision = run(
        `    validations:\n      - expression: "false"\n        message: fallback\n        messageExpression: ${JSON.stringify(messageExpression)}\n`,
      );
      assert.deepEqual(decision, { allowed: false, message: 'fallback', code: 422 }, messageExpression);
    }
  });

  it('cuts a messageExpression result to 5 KiB', () => {
    const decision = run(
      '    validations:\n      - expression: "false"\n        messageExpression: "lists.range(6000).map(i, \'x\').join()"\n',
    );
    assert.deepEqual(decision, { allowed: false, message: 'x'.repeat(5 * 1024), code: 422 });
  });

  it('fails with reason error when a validation cannot be evaluated', () => {
    const failure = run('    validations: [{ expression: "object.missing == 1" }]\n');
    assert.ok(failure instanceof StepFailedError);
    assert.equal(failure.reason, 'error');
    assert.match(failure.message, /^validations\[0\]: /);
  });

  it('annotates with each auditAnnotation, skipping null, also when it refuses', () => {
    const inv = invocation();
    const decision = run(
      '    validations: [{ expression: "false", message: no }]\n    auditAnnotations:\n      - { key: a, valueExpression: "\'1\'" }\n      - { key: b, valueExpression: "null" }\n',
      inv,
    );
    assert.deepEqual([decision, inv.annotations], [{ allowed: false, message: 'no', code: 422 }, [['a', '1']]]);
  });

  it('evaluates a variable once per review, and variables may read earlier ones', () => {
    const decision = run(
      '    variables:\n      - { name: names, expression: "object.spec.containers.map(c, c.name)" }\n      - { name: first, expression: "variables.names[0]" }\n    validations: [{ expression: "variables.first == \'x\'", messageExpression: "\'first is \' + variables.first" }]\n',
    );
    assert.deepEqual(decision, { allowed: false, message: 'first is web', code: 422 });
  });

  it("shares one cost budget between the review's policies", function () {
    this.timeout(30_000);
    const containers = Array.from({ length: 40_000 }, (_, i) => ({ name: `c${i}` }));
    const request = requestOf(podCreate());
    request.object = { ...request.object, spec: { containers } };
    // Each walk fits the per-expression limit; together they exceed the review's.
    const walk =
      "    validations: [{ expression: \"object.spec.containers.all(c, c.name.size() > 1 && c.name.startsWith('c') && c.name != 'x' && c.name != 'y')\" }]\n";
    const policies = specs(...Array.from({ length: 12 }, () => walk));
    const inv = invocation(request);
    const outcomes = policies.map((spec) => policyOutcome(spec, inv));
    const failed = outcomes.filter((o) => o instanceof StepFailedError);
    assert.deepEqual(outcomes[0], { allowed: true });
    assert.ok(failed.length > 0, 'the review budget ran out');
    assert.ok(failed.every((f) => f.reason === 'cost_exceeded'));
  });
});

describe('runPolicy() on an object nested past what CEL is handed', () => {
  it('fails the step with reason error, saying why', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 1001; i++) deep = { a: deep };
    const request = requestOf(podCreate());
    const outcome = run(
      '    validations: [{ expression: "true" }]\n',
      invocation({ ...request, object: { ...request.object!, spec: deep as object } }),
    );
    assert.ok(outcome instanceof StepFailedError);
    assert.deepEqual(
      [outcome.reason, outcome.message],
      ['error', 'the request cannot be handed to CEL: the value nests deeper than 1000 levels'],
    );
  });
});
