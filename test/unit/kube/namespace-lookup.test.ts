import assert from 'node:assert/strict';
import { boundedLookup } from '../../../server/kube/namespace-labels.js';
import type { Labels } from '../../../server/steps/label-selector.js';

/** A GET that answers when the test says so, recording the names asked for. */
function pendingReads() {
  const asked: string[] = [];
  const answers = new Map<string, (labels: Labels | undefined) => void>();
  const read = (name: string) =>
    new Promise<Labels | undefined>((resolve) => {
      asked.push(name);
      answers.set(name, resolve);
    });
  return { asked, read, answer: (name: string, labels: Labels | undefined) => answers.get(name)?.(labels) };
}

describe('boundedLookup() (the namespace GET on a cache miss)', () => {
  it('does not look up a name no namespace can have', async () => {
    const reads = pendingReads();
    const lookup = boundedLookup(reads.read);
    assert.equal(await lookup('Not_A_Namespace'), undefined);
    assert.equal(await lookup('x'.repeat(64)), undefined);
    assert.deepEqual(reads.asked, []);
  });

  it('shares one GET between the reviews of one namespace, and asks again once it is answered', async () => {
    const reads = pendingReads();
    const lookup = boundedLookup(reads.read);
    const first = lookup('team-a');
    const second = lookup('team-a');
    reads.answer('team-a', { team: 'a' });
    assert.deepEqual(await Promise.all([first, second]), [{ team: 'a' }, { team: 'a' }]);
    const third = lookup('team-a');
    reads.answer('team-a', { team: 'a' });
    await third;
    assert.deepEqual(reads.asked, ['team-a', 'team-a']);
  });

  it('gives no labels past its limit of lookups in flight, without asking', async () => {
    const reads = pendingReads();
    const lookup = boundedLookup(reads.read, { maxLookups: 2 });
    const held = [lookup('a'), lookup('b')];
    assert.equal(await lookup('c'), undefined);
    assert.deepEqual(reads.asked, ['a', 'b']);
    reads.answer('a', undefined);
    reads.answer('b', undefined);
    await Promise.all(held);
  });

  it('holds a review no longer than its timeout', async () => {
    const reads = pendingReads();
    const lookup = boundedLookup(reads.read, { timeoutMs: 10 });
    assert.equal(await lookup('slow'), undefined);
    reads.answer('slow', { late: 'yes' });
  });
});
