/**
 * Test files written from a recording (policy-test/suite-writer.ts): split into numbered files past so many
 * cases (MAX_CASES_WRITTEN, two here), one file named after the recording alone, and each read back by the test file
 * reader with the expectations pinned, whatever the texts hold.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestForObject } from '../../../server/admission/request-for-object.js';
import type { CaseAnswer } from '../../../server/policy-test/case-answer.js';
import { readTestFile } from '../../../server/policy-test/read-test-file.js';
import type { TestCase } from '../../../server/policy-test/suite.js';
import { PinnedSuiteWriter } from '../../../server/policy-test/suite-writer.js';

const ANSWER: CaseAnswer = {
  allowed: false,
  code: 403,
  message: '/looks like a regex/ but is "a message"\n with a line break',
  warnings: ['w: [1]'],
  auditAnnotations: { 'step.key': 'value: yes' },
  patch: [],
  patched: undefined,
};

function testCase(i: number): TestCase {
  const request = requestForObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `web-${i}`, namespace: 'a' } });
  return {
    name: `line ${i + 1}: CREATE Pod a/web-${i} on mutate`,
    field: `cases[${i}]`,
    request,
    route: 'mutate',
    expect: { warningsMatch: 'subset', auditAnnotationsMatch: 'subset', patchedMatch: 'subset' },
  };
}

describe('pinned test files', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'suite-writer-'));
    await writeFile(join(dir, 'gateway.yaml'), 'chain: []\n');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const open = (base: string) =>
    PinnedSuiteWriter.open({
      dir: join(dir, 'out'),
      base,
      comment: 'written by a test',
      config: join(dir, 'gateway.yaml'),
      recording: join(dir, 'reviews.ndjson'),
      providers: ['scanner'],
      maxCases: 2,
    });

  it('splits past its number of cases into numbered files, each read back whole', async () => {
    const writer = await open('reviews');
    for (let i = 0; i < 3; i++) await writer.add(testCase(i), ANSWER);
    const written = await writer.finish();
    assert.deepEqual(await readdir(join(dir, 'out')), ['reviews-001.test.yaml', 'reviews-002.test.yaml']);
    assert.deepEqual(written, [join(dir, 'out/reviews-001.test.yaml'), join(dir, 'out/reviews-002.test.yaml')]);
    const [first, second] = await Promise.all(written.map((file) => readTestFile(file, dir)));
    assert.equal(first!.cases.length, 2);
    assert.equal(second!.cases.length, 1);
    assert.equal(first!.config, join(dir, 'gateway.yaml'));
    assert.equal(first!.providers.get('scanner')?.from, join(dir, 'reviews.ndjson'));
    const { expect, request, route } = second!.cases[0]!;
    assert.equal(request.name, 'web-2');
    assert.equal(route, 'mutate');
    assert.equal(expect.allowed, false);
    assert.equal(expect.code, 403);
    assert.equal(expect.message?.test(ANSWER.message!), true);
    assert.equal(expect.message?.test('looks like a regex'), false);
    assert.deepEqual(
      expect.warnings?.map((w) => w.test('w: [1]')),
      [true],
    );
    assert.equal(expect.warningsMatch, 'whole');
    assert.equal(expect.auditAnnotations?.['step.key']?.test('value: yes'), true);
    assert.deepEqual(expect.patch, []);
  });

  it('names a single file after the recording, and refuses a folder that has one of its names', async () => {
    const writer = await open('reviews');
    await writer.add(testCase(0), ANSWER);
    assert.deepEqual(await writer.finish(), [join(dir, 'out/reviews.test.yaml')]);
    await assert.rejects(open('reviews'), {
      message: `${join(dir, 'out/reviews.test.yaml')} already exists: remove it, or write into another folder`,
    });
    // Another recording's files are not in the way.
    await (await open('other')).finish();
  });
});
