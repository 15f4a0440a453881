import assert from 'node:assert/strict';
import { kubeErrorMessage } from '../../../server/kube/kube-errors.js';

describe('kubeErrorMessage()', () => {
  it('reads the Status message of an ApiException instead of its whole dump', () => {
    const err = Object.assign(
      new Error('HTTP-Code: 404\nMessage: Unknown API Status Code!\nBody: {...}\nHeaders: {...}'),
      {
        code: 404,
        body: JSON.stringify({
          kind: 'Status',
          message: 'the server could not find the requested resource',
          code: 404,
        }),
      },
    );
    assert.equal(kubeErrorMessage(err), 'HTTP 404: the server could not find the requested resource');
  });

  it('keeps the code when the body is not a Status', () => {
    assert.equal(
      kubeErrorMessage(Object.assign(new Error('x'), { code: 503, body: 'upstream down' })),
      'HTTP 503: upstream down',
    );
  });

  it('is the first line of any other error', () => {
    assert.equal(
      kubeErrorMessage(new Error('connect ECONNREFUSED 127.0.0.1:16443\n    at stack')),
      'connect ECONNREFUSED 127.0.0.1:16443',
    );
  });
});
