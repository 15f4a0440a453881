/**
 * How a case's expectations are held against an answer (policy-test/expectations.ts): subset and whole
 * comparisons of the patched object, warnings and audit annotations, text patterns, and the patterns the
 * suite writer pins a text with.
 */
import assert from 'node:assert/strict';
import type { CaseAnswer } from '../../../server/policy-test/case-answer.js';
import { unmetExpectations } from '../../../server/policy-test/expectations.js';
import type { Expectation } from '../../../server/policy-test/suite.js';
import { literalPattern, textPattern } from '../../../server/policy-test/text-pattern.js';

const ANSWER: CaseAnswer = {
  allowed: true,
  warnings: ['image-policy: tag latest (mode warn: not enforced)', 'pod-security: must run as non-root'],
  auditAnnotations: { 'scanner.scanned': 'true', 'scanner.version': '1.2.3' },
  patch: [{ op: 'add', path: '/metadata/labels/owner', value: 'platform' }],
  patched: {
    metadata: { name: 'web', labels: { app: 'web', owner: 'platform' } },
    spec: {
      containers: [
        { name: 'a', image: 'nginx:1' },
        { name: 'b', image: 'redis:7' },
      ],
    },
  },
};

const expecting = (fields: Partial<Expectation>): Expectation => ({
  warningsMatch: 'subset',
  auditAnnotationsMatch: 'subset',
  patchedMatch: 'subset',
  ...fields,
});

describe('policy test expectations', () => {
  it('compares patched as a subset: only what is expected, lists item by item at their length', () => {
    assert.deepEqual(
      unmetExpectations(expecting({ patched: { metadata: { labels: { owner: 'platform' } } } }), ANSWER),
      [],
    );
    assert.deepEqual(
      unmetExpectations(
        expecting({
          patched: { metadata: { labels: { team: 'a' } }, spec: { containers: [{}, { image: 'redis:8' }] } },
        }),
        ANSWER,
      ),
      [
        { field: 'patched /metadata/labels/team', expected: ['"a"'], actual: ['(absent)'] },
        { field: 'patched /spec/containers/1/image', expected: ['"redis:8"'], actual: ['"redis:7"'] },
      ],
    );
    assert.deepEqual(unmetExpectations(expecting({ patched: { spec: { containers: [{}] } } }), ANSWER), [
      {
        field: 'patched /spec/containers',
        expected: ['[{}]'],
        actual: ['[{"name":"a","image":"nginx:1"},{"name":"b","image":"redis:7"}]'],
      },
    ]);
  });

  it('compares patched as a whole: a field the expectation lacks is a difference too', () => {
    const patched = ANSWER.patched as { metadata: object; spec: object };
    assert.deepEqual(
      unmetExpectations(
        expecting({
          patched: { metadata: { name: 'web', labels: { app: 'web' } }, spec: patched.spec },
          patchedMatch: 'whole',
        }),
        ANSWER,
      ),
      [{ field: 'patched /metadata/labels/owner', expected: ['(absent)'], actual: ['"platform"'] }],
    );
  });

  it('matches each expected warning to a warning of its own; whole also refuses the others; [] means none', () => {
    const both = [textPattern('non-root'), textPattern('/^image-policy: tag \\w+/')];
    assert.deepEqual(unmetExpectations(expecting({ warnings: both, warningsMatch: 'whole' }), ANSWER), []);
    // One warning cannot answer for two expectations.
    assert.deepEqual(unmetExpectations(expecting({ warnings: [textPattern('pod'), textPattern('pod')] }), ANSWER), [
      {
        field: 'warnings',
        expected: ['a warning to contain "pod"'],
        actual: ANSWER.warnings.map((w) => JSON.stringify(w)),
      },
    ]);
    assert.deepEqual(
      unmetExpectations(expecting({ warnings: [textPattern('non-root')], warningsMatch: 'whole' }), ANSWER),
      [{ field: 'warnings', expected: [], actual: [JSON.stringify(ANSWER.warnings[0])] }],
    );
    assert.deepEqual(unmetExpectations(expecting({ warnings: [] }), ANSWER), [
      { field: 'warnings', expected: ['(none)'], actual: ANSWER.warnings.map((w) => JSON.stringify(w)) },
    ]);
  });

  it('checks audit annotations by key: a subset, or the whole map', () => {
    const scanned = { 'scanner.scanned': textPattern('true') };
    assert.deepEqual(unmetExpectations(expecting({ auditAnnotations: scanned }), ANSWER), []);
    assert.deepEqual(
      unmetExpectations(expecting({ auditAnnotations: scanned, auditAnnotationsMatch: 'whole' }), ANSWER),
      [{ field: 'auditAnnotations.scanner.version', expected: ['(absent)'], actual: ['"1.2.3"'] }],
    );
  });

  it('says when a patch has the same operations in another order', () => {
    const reordered = { ...ANSWER, patch: [ANSWER.patch[0]!, { op: 'remove' as const, path: '/x' }] };
    assert.deepEqual(unmetExpectations(expecting({ patch: [...reordered.patch].reverse() }), reordered), [
      {
        field: 'patch (the same operations in another order)',
        expected: ['{"op":"remove","path":"/x"}', '{"op":"add","path":"/metadata/labels/owner","value":"platform"}'],
        actual: ['{"op":"add","path":"/metadata/labels/owner","value":"platform"}', '{"op":"remove","path":"/x"}'],
      },
    ]);
  });

  it('compares patch operations as JSON values: keys written in another order are the same operation', () => {
    // As a test file may write them: path before op, and a value's keys in another order.
    const written = [
      { path: '/metadata/labels/owner', op: 'add' as const, value: 'platform' },
      { path: '/spec', value: { b: 2, a: 1 }, op: 'add' as const },
    ];
    const answer = {
      ...ANSWER,
      patch: [ANSWER.patch[0]!, { op: 'add' as const, path: '/spec', value: { a: 1, b: 3 } }],
    };
    assert.deepEqual(unmetExpectations(expecting({ patch: written }), answer), [
      {
        field: 'patch',
        expected: ['{"path":"/spec","value":{"b":2,"a":1},"op":"add"}'],
        actual: ['{"op":"add","path":"/spec","value":{"a":1,"b":3}}'],
      },
    ]);
    const reordered = { ...answer, patch: [answer.patch[1]!, answer.patch[0]!] };
    assert.deepEqual(unmetExpectations(expecting({ patch: [written[0]!, answer.patch[1]!] }), reordered), [
      {
        field: 'patch (the same operations in another order)',
        expected: [
          '{"path":"/metadata/labels/owner","op":"add","value":"platform"}',
          '{"op":"add","path":"/spec","value":{"a":1,"b":3}}',
        ],
        actual: [
          '{"op":"add","path":"/spec","value":{"a":1,"b":3}}',
          '{"op":"add","path":"/metadata/labels/owner","value":"platform"}',
        ],
      },
    ]);
  });

  it('reads /…/ as a regular expression and anything else as a substring; a pinned text reads back as itself', () => {
    assert.equal(textPattern('/^a.c$/i').test('ABC'), true);
    assert.equal(textPattern('a.c').test('abc'), false);
    assert.equal(textPattern('a.c').test('xa.cx'), true);
    assert.throws(() => textPattern('/a/g'), /flags may be i, m, s and u, got "g"/);
    for (const text of ['plain', '/', '/looks like a regex/', '/a.*b (mode warn)/']) {
      assert.equal(textPattern(literalPattern(text)).test(text), true, text);
    }
    // One that would read as a regular expression is pinned as exactly itself.
    assert.equal(literalPattern('/a.*b/'), '/^\\/a\\.\\*b\\/$/');
    assert.equal(textPattern(literalPattern('/a.*b/')).test('/aXXb/'), false);
  });
});
