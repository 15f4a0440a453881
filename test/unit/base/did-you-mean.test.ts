import assert from 'node:assert/strict';
import { closestName, didYouMean, didYouMeanOrKnown } from '../../../server/base/did-you-mean.js';

describe('didYouMean()', () => {
  const fields = ['failurePolicy', 'timeoutSeconds', 'reinvocationPolicy', 'match', 'mode'];

  it('names the closest known name for a typo', () => {
    assert.equal(didYouMean('failurPolicy', fields), ' (did you mean "failurePolicy"?)');
    assert.equal(closestName('timeoutSecond', fields), 'timeoutSeconds');
    assert.equal(closestName('mdoe', fields), 'mode');
  });

  it('matches another case of the same name', () => {
    assert.equal(closestName('FailurePolicy', fields), 'failurePolicy');
  });

  it('suggests nothing when no name is close', () => {
    assert.equal(didYouMean('replicas', fields), '');
    assert.equal(closestName('x', []), undefined);
  });
});

describe('didYouMeanOrKnown()', () => {
  it('suggests the closest name, or lists the known ones when none is close', () => {
    const known = ['chain', 'server', 'log'];
    assert.equal(didYouMeanOrKnown('chains', known), ' (did you mean "chain"?)');
    assert.equal(didYouMeanOrKnown('plugins', known), ' (known: chain, server, log)');
  });
});
