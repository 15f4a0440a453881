import assert from 'node:assert/strict';
import { cloneJson } from '../../../server/patch/clone.js';
import { podCreate } from '../../fixtures/reviews/index.js';

describe('cloneJson()', () => {
  it('copies a whole object deeply, sharing nothing', () => {
    const pod = podCreate().request!.object!;
    const copy = cloneJson(pod);
    assert.deepEqual(copy, pod);
    (copy.metadata!.labels ??= {}).changed = 'yes';
    (copy.spec as { containers: unknown[] }).containers.pop();
    assert.deepEqual(pod, podCreate().request!.object);
  });

  it('keeps a "__proto__" key as data instead of setting the prototype', () => {
    const parsed = JSON.parse('{"a":{"__proto__":{"polluted":true}}}') as { a: Record<string, unknown> };
    const copy = cloneJson(parsed);
    assert.equal(Object.getPrototypeOf(copy.a), Object.prototype);
    assert.deepEqual(Object.keys(copy.a), ['__proto__']);
    assert.equal((copy.a as { polluted?: unknown }).polluted, undefined);
    assert.equal(JSON.stringify(copy), '{"a":{"__proto__":{"polluted":true}}}');
  });

  it('returns primitives and null as they are', () => {
    assert.deepEqual([cloneJson(1), cloneJson('s'), cloneJson(null), cloneJson(true)], [1, 's', null, true]);
  });
});
