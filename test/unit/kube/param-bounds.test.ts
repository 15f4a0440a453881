import assert from 'node:assert/strict';
import { createParamLedger, objectBytes, overBoundError } from '../../../server/kube/param-bounds.js';

const BOUNDS = { maxObjects: 3, maxBytes: 100, maxTotalObjects: 5, maxTotalBytes: 150 };

describe('createParamLedger(): what the params watches hold, per query and in all', function () {
  it('counts an object once however often it is updated, and forgets it when deleted', function () {
    const ledger = createParamLedger(BOUNDS);
    const q = ledger.query();
    assert.equal(q.set('team-a/one', 10), undefined);
    assert.equal(q.set('team-a/one', 30), undefined);
    assert.equal(q.set('team-a/two', 20), undefined);
    assert.deepEqual(
      [q.held(), ledger.held()],
      [
        { objects: 2, bytes: 50 },
        { objects: 2, bytes: 50 },
      ],
    );
    q.delete('team-a/one');
    q.delete('team-a/missing');
    assert.deepEqual(ledger.held(), { objects: 1, bytes: 20 });
  });

  it('names the first bound an add goes past: the query’s objects, its bytes, then the totals', function () {
    const ledger = createParamLedger(BOUNDS);
    const a = ledger.query();
    a.set('1', 1);
    a.set('2', 1);
    a.set('3', 1);
    assert.deepEqual(a.set('4', 1), { field: 'maxObjects', limit: 3 });
    a.clear();
    assert.deepEqual(a.set('big', 101), { field: 'maxBytes', limit: 100 });
    a.clear();
    const b = ledger.query();
    a.set('1', 60);
    a.set('2', 30);
    b.set('1', 50);
    assert.deepEqual(b.set('2', 20), { field: 'maxTotalBytes', limit: 150 });
    a.clear();
    b.clear();
    assert.deepEqual(ledger.held(), { objects: 0, bytes: 0 });
    for (const id of ['1', '2', '3']) a.set(id, 1);
    b.set('1', 1);
    b.set('2', 1);
    assert.deepEqual(b.set('3', 1), { field: 'maxTotalObjects', limit: 5 });
  });

  it('weighs a list as replacing what its query holds, against what the others hold', function () {
    const ledger = createParamLedger(BOUNDS);
    const a = ledger.query();
    const b = ledger.query();
    a.set('1', 40);
    a.set('2', 40);
    b.set('1', 60);
    assert.equal(a.fits({ objects: 3, bytes: 90 }), undefined);
    assert.deepEqual(a.fits({ objects: 3, bytes: 91 }), { field: 'maxTotalBytes', limit: 150 });
    assert.deepEqual(a.fits({ objects: 4, bytes: 4 }), { field: 'maxObjects', limit: 3 });
    assert.equal(b.fits({ objects: 3, bytes: 3 }), undefined);
    a.set('3', 1);
    assert.deepEqual(b.fits({ objects: 3, bytes: 3 }), { field: 'maxTotalObjects', limit: 5 });
  });
});

describe('objectBytes()', function () {
  it('is the byte length of the object’s JSON, multi-byte characters included', function () {
    assert.equal(objectBytes({ data: { a: 'é' } }), Buffer.byteLength('{"data":{"a":"é"}}'));
  });
});

describe('overBoundError()', function () {
  it('names the params, the bound and the field that sets it', function () {
    assert.equal(
      overBoundError('of v1 ConfigMap selected by "team=a"', { field: 'maxObjects', limit: 256 }),
      'the params of v1 ConfigMap selected by "team=a" exceed the gateway\'s bound (more than 256 objects, kube.policyParams.maxObjects): none are read until they fit',
    );
    assert.equal(
      overBoundError('of v1 ConfigMap', { field: 'maxTotalBytes', limit: 1024 }),
      "the params of v1 ConfigMap exceed the gateway's bound (more than the 1024 bytes all params together may hold, kube.policyParams.maxTotalBytes): none are read until they fit",
    );
  });
});
