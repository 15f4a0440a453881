import assert from 'node:assert/strict';
import { defaultInflightBytes } from '../../../server/http/memory-limit.js';
import { laneWorkersBytes } from '../../../server/lane/large-review-lane.js';

const MiB = 1024 * 1024;

describe('the default server.maxInflightBytes', () => {
  it('is what 80 % of the memory limit leaves after the baseline measured at start', () => {
    // The Deployment's 192 Mi limit and a gateway that measured 74 MiB resident before its first review.
    assert.equal(
      defaultInflightBytes({ bytes: 192 * MiB, source: 'cgroup' }, 74 * MiB, 7 * MiB),
      Math.floor(0.8 * 192 * MiB) - 74 * MiB,
    );
  });

  it('leaves room for one body of server.maxRequestBytes beside the share kept for small reviews, however large the baseline', () => {
    // 7 MiB weighs 35 MiB (5 bytes per body byte), which must fit in the fifteen sixteenths large reviews may use.
    assert.equal(
      defaultInflightBytes({ bytes: 192 * MiB, source: 'cgroup' }, 150 * MiB, 7 * MiB),
      Math.ceil((35 * MiB * 16) / 15),
    );
  });

  it('counts each large-review worker with its young generation in the baseline it is derived from', () => {
    // Two workers of 40 MiB each, with the default 48 MiB young generation, under a 1 GiB limit.
    const workers = laneWorkersBytes({ workers: 2, youngGenerationMiB: 48 });
    assert.equal(workers, 2 * (40 + 48) * MiB);
    assert.equal(laneWorkersBytes({ workers: 2, youngGenerationMiB: 0 }), 2 * 40 * MiB, "V8's own sizing");
    assert.equal(laneWorkersBytes({ workers: 0, youngGenerationMiB: 48 }), 0, 'no lane');
    assert.equal(
      defaultInflightBytes({ bytes: 1024 * MiB, source: 'cgroup' }, 80 * MiB + workers, 7 * MiB),
      Math.floor(0.8 * 1024 * MiB) - 80 * MiB - 176 * MiB,
    );
  });
});
