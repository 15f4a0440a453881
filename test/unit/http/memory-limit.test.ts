import assert from 'node:assert/strict';
import { defaultInflightBytes } from '../../../server/http/memory-limit.js';

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
});
