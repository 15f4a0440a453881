import assert from 'node:assert/strict';
import { checkContentType, decodeReview, encodeReview } from '../../../server/admission/codec.js';
import { ReviewDecodeError } from '../../../server/admission/review-decode-error.js';
import { podCreate } from '../../fixtures/reviews/index.js';

function decodeError(body: string): ReviewDecodeError {
  try {
    decodeReview(body);
  } catch (err) {
    assert.ok(err instanceof ReviewDecodeError, `expected ReviewDecodeError, got ${String(err)}`);
    return err;
  }
  assert.fail('decodeReview accepted the body');
}

describe('checkContentType()', () => {
  it('accepts application/json with parameters', () => {
    checkContentType('application/json; charset=utf-8');
    checkContentType('Application/JSON');
  });
  it('refuses other types with 415 naming the type', () => {
    assert.throws(() => checkContentType('text/plain'), {
      status: 415,
      message: 'contentType=text/plain, expected application/json',
    });
    assert.throws(() => checkContentType(undefined), {
      status: 415,
      message: 'contentType=, expected application/json',
    });
  });
});

describe('decodeReview()', () => {
  it('returns the request and apiVersion of a v1 review', () => {
    const review = podCreate();
    const decoded = decodeReview(JSON.stringify(review));
    assert.equal(decoded.apiVersion, 'admission.k8s.io/v1');
    assert.deepEqual(decoded.request, review.request);
  });

  it('keeps v1beta1 so the answer can echo it', () => {
    const review = { ...podCreate(), apiVersion: 'admission.k8s.io/v1beta1' };
    assert.equal(decodeReview(JSON.stringify(review)).apiVersion, 'admission.k8s.io/v1beta1');
  });

  it('fills in the core group when a hand-written review omits it', () => {
    const review = podCreate();
    const request = review.request as unknown as Record<string, Record<string, unknown>>;
    delete request.kind!.group;
    assert.equal(decodeReview(JSON.stringify(review)).request.kind.group, '');
  });

  const cases: Array<[string, string, string, string]> = [
    ['malformed JSON', '{"kind":', 'request body is not valid JSON: ', ''],
    ['a JSON array', '[]', 'request body must be a JSON object (an AdmissionReview)', ''],
    [
      'the wrong kind',
      JSON.stringify({ ...podCreate(), kind: 'Pod' }),
      'kind="Pod", expected "AdmissionReview"',
      '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21',
    ],
    [
      'an unknown apiVersion',
      JSON.stringify({ ...podCreate(), apiVersion: 'v1' }),
      'apiVersion="v1", expected "admission.k8s.io/v1" or "admission.k8s.io/v1beta1"',
      '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21',
    ],
    [
      'no request',
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }),
      'request is missing: expected an AdmissionReview with a request object',
      '',
    ],
    [
      'an empty uid',
      JSON.stringify({ ...podCreate(), request: { ...podCreate().request, uid: '' } }),
      'request.uid is missing or empty',
      '',
    ],
    [
      'an unknown operation',
      JSON.stringify({ ...podCreate(), request: { ...podCreate().request, operation: 'PATCH' } }),
      'request.operation="PATCH", expected CREATE, UPDATE, DELETE or CONNECT',
      '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21',
    ],
    [
      'an object that is not an object',
      JSON.stringify({ ...podCreate(), request: { ...podCreate().request, object: 'pod' } }),
      'request.object must be an object or null',
      '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21',
    ],
    [
      'a resource without a name',
      JSON.stringify({ ...podCreate(), request: { ...podCreate().request, resource: { version: 'v1' } } }),
      'request.resource must be an object with string resource and version',
      '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21',
    ],
    ...(
      [
        ['a username that is not a string', { username: 12345 }, 'request.userInfo.username must be a string'],
        ['a user uid that is not a string', { username: 'a', uid: {} }, 'request.userInfo.uid must be a string'],
        ['groups that are not strings', { groups: ['a', 1] }, 'request.userInfo.groups must be an array of strings'],
        ['groups that are not an array', { groups: 'system:masters' }, 'request.userInfo.groups must be an array'],
        [
          'extra values that are not arrays of strings',
          { extra: { scopes: 'all' } },
          'request.userInfo.extra must map each key to an array of strings',
        ],
      ] as const
    ).map(([name, userInfo, message]): [string, string, string, string] => [
      name,
      JSON.stringify({ ...podCreate(), request: { ...podCreate().request, userInfo } }),
      message,
      '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21',
    ]),
  ];
  for (const [name, body, message, uid] of cases) {
    it(`refuses ${name} with 400 saying what is wrong`, () => {
      const err = decodeError(body);
      assert.equal(err.status, 400);
      assert.ok(err.message.startsWith(message), `message: ${err.message}`);
      assert.equal(err.uid, uid);
    });
  }
});

describe('encodeReview()', () => {
  it('wraps the response in the request apiVersion', () => {
    assert.deepEqual(JSON.parse(encodeReview('admission.k8s.io/v1beta1', { uid: 'u1', allowed: true }).toString()), {
      apiVersion: 'admission.k8s.io/v1beta1',
      kind: 'AdmissionReview',
      response: { uid: 'u1', allowed: true },
    });
  });

  for (const [size, what] of [
    [10, 'a small patch (a string)'],
    [70_000, 'a large patch (bytes, the patch copied in)'],
  ] as const) {
    it(`carries ${what}, warnings and annotations as the same JSON a plain serialisation gives`, () => {
      const ops = [{ op: 'add', path: '/metadata/labels/é', value: '"x"'.padEnd(size, 'y') }];
      const response = {
        uid: 'u2',
        allowed: true,
        patchType: 'JSONPatch' as const,
        patch: Buffer.from(JSON.stringify(ops)).toString('base64'),
        warnings: ['a "quoted" warning: ünïcode'],
        auditAnnotations: { 'step.key': 'value with "patch":"" inside' },
      };
      const encoded = encodeReview('admission.k8s.io/v1', response);
      assert.equal(typeof encoded === 'string', size < 1000);
      assert.deepEqual(JSON.parse(encoded.toString()), {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response,
      });
    });
  }
});
