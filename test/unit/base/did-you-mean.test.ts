import assert from 'node:assert/strict';
import { closestName, didYouMean } from '../../../server/base/did-you-mean.js';

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
