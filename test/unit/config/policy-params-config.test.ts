/** `kube.policyParams` (docs/configuration.md "Policies from the cluster"): the bounds of the params watches. */
import assert from 'node:assert/strict';
import { configError, parseConfig as parse } from '../../helpers/config.js';

describe('kube.policyParams', () => {
  it('takes every field', () => {
    const config = parse(
      'kube: { policyParams: { maxObjects: 3, maxBytes: 2048, maxTotalObjects: 9, maxTotalBytes: 4096 } }',
    );
    assert.deepEqual(config.kube.policyParams, {
      maxObjects: 3,
      maxBytes: 2048,
      maxTotalObjects: 9,
      maxTotalBytes: 4096,
    });
  });

  it('refuses a bound a binding could not read whole, and totals below one query’s bound', () => {
    assert.equal(
      configError('kube: { policyParams: { maxObjects: 257 } }'),
      'gateway.yaml:1:25: kube.policyParams.maxObjects: expected an integer from 1 to 256, got 257',
    );
    assert.equal(
      configError('kube: { policyParams: { maxObjects: 10, maxTotalObjects: 5 } }'),
      'gateway.yaml:1:41: kube.policyParams.maxTotalObjects: must be at least maxObjects (10), got 5',
    );
    assert.equal(
      configError('kube: { policyParams: { maxTotalBytes: 2048 } }'),
      'gateway.yaml:1:25: kube.policyParams.maxTotalBytes: must be at least maxBytes (4194304), got 2048',
    );
  });
});
