/**
 * What a step's denial or failure does to the review, for every mode and failurePolicy (README "Semantics in
 * one screen"; docs/configuration.md, "failurePolicy" and "mode").
 */
import assert from 'node:assert/strict';
import type { FailureReason } from '../../../server/base/errors.js';
import type { FailurePolicy, Mode } from '../../../server/config/step-options.js';
import {
  denialConsequence,
  effectiveFailurePolicy,
  failureConsequence,
  type Consequence,
} from '../../../server/steps/policy.js';

const step = (mode: Mode, failurePolicy: FailurePolicy) => ({
  name: 'checker',
  source: 'plugin' as const,
  mode,
  failurePolicy,
});

const denial = { message: 'no team label', code: 422 };
const failure = { reason: 'error' as FailureReason, message: 'boom' };

const blocked = (message: string, code: number): Consequence => ({
  kind: 'block',
  denial: { allowed: false, message, code },
});
const failedOpen: Consequence = {
  kind: 'fail-open',
  warning: 'failed open (error): boom',
  key: 'failed-open',
  value: 'error: boom',
};

describe('policy', () => {
  const table: [Mode, FailurePolicy, FailurePolicy, Consequence, Consequence][] = [
    // mode,    failurePolicy, acts as,  a denial becomes,                                a failure becomes
    [
      'enforce',
      'Fail',
      'Fail',
      blocked('checker: no team label', 422),
      blocked('plugin "checker" failed (error): boom', 500),
    ],
    ['enforce', 'Ignore', 'Ignore', blocked('checker: no team label', 422), failedOpen],
    ['warn', 'Fail', 'Ignore', { kind: 'warn', warning: 'no team label (mode warn: not enforced)' }, failedOpen],
    ['warn', 'Ignore', 'Ignore', { kind: 'warn', warning: 'no team label (mode warn: not enforced)' }, failedOpen],
    ['audit', 'Fail', 'Ignore', { kind: 'annotate', key: 'would-deny', value: 'no team label' }, failedOpen],
    ['audit', 'Ignore', 'Ignore', { kind: 'annotate', key: 'would-deny', value: 'no team label' }, failedOpen],
  ];
  for (const [mode, failurePolicy, effective, onDenial, onFailure] of table) {
    describe(`a step in mode ${mode} with failurePolicy ${failurePolicy}`, () => {
      it(`acts as ${effective}`, () => {
        assert.equal(effectiveFailurePolicy(step(mode, failurePolicy)), effective);
      });
      it(`turns a denial into: ${onDenial.kind}`, () => {
        assert.deepEqual(denialConsequence(step(mode, failurePolicy), denial), onDenial);
      });
      it(`turns a failure into: ${onFailure.kind}`, () => {
        assert.deepEqual(failureConsequence(step(mode, failurePolicy), failure), onFailure);
      });
    });
  }

  it('names a provider as such when its failure blocks', () => {
    assert.deepEqual(
      failureConsequence({ ...step('enforce', 'Fail'), source: 'provider' }, { reason: 'timeout', message: 'late' }),
      blocked('provider "checker" failed (timeout): late', 500),
    );
  });

  it('says a denial without a message is one, and shows none of a message’s control characters or excess', () => {
    assert.deepEqual(
      denialConsequence(step('enforce', 'Fail'), { message: '', code: 403 }),
      blocked('checker: denied without explanation', 403),
    );
    assert.deepEqual(denialConsequence(step('audit', 'Fail'), { message: 'a\u001b[31m\nb', code: 403 }), {
      kind: 'annotate',
      key: 'would-deny',
      value: 'a [31m b',
    });
    const long = denialConsequence(step('warn', 'Fail'), { message: 'x'.repeat(5000), code: 403 });
    assert.equal(long.kind, 'warn');
    assert.match(
      long.kind === 'warn' ? long.warning : '',
      /^x{4096}… \(904 more characters\) \(mode warn: not enforced\)$/,
    );
  });
});
