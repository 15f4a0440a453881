/**
 * lowerThreadPriority: on Linux it sets the calling thread's niceness (setpriority with pid 0 reaches that thread
 * alone); elsewhere the same call would lower the whole process, so it refuses, saying why.
 */
import assert from 'node:assert/strict';
import { lowerThreadPriority } from '../../../server/lane/thread-priority.js';

describe('lowerThreadPriority', () => {
  const recorder = () => {
    const calls: Array<[number, number]> = [];
    return { calls, set: (pid: number, priority: number) => void calls.push([pid, priority]) };
  };

  it('sets the calling thread’s niceness on Linux', () => {
    const { calls, set } = recorder();
    assert.equal(lowerThreadPriority(10, 'linux', set), undefined);
    assert.deepEqual(calls, [[0, 10]]);
  });

  it('leaves it at 0, on any platform', () => {
    const { calls, set } = recorder();
    assert.equal(lowerThreadPriority(0, 'linux', set), undefined);
    assert.equal(lowerThreadPriority(0, 'darwin', set), undefined);
    assert.deepEqual(calls, []);
  });

  it('does nothing elsewhere, where the whole process would be lowered, and says so', () => {
    const { calls, set } = recorder();
    assert.equal(lowerThreadPriority(10, 'darwin', set), "not on darwin: it would lower the event loop's priority too");
    assert.deepEqual(calls, []);
  });

  it('says why when the system refuses', () => {
    const refuse = () => {
      throw new Error('EACCES: permission denied');
    };
    assert.equal(lowerThreadPriority(10, 'linux', refuse), 'EACCES: permission denied');
  });
});
