import assert from 'node:assert/strict';
import type { AdmissionRequest, JsonPatchOperation } from '../../../server/admission/types.js';
import { compileRedaction, pointerSegments } from '../../../server/recording/redact.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';

function secretRequest(): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'Secret' },
    resource: { group: '', version: 'v1', resource: 'secrets' },
    namespace: 'team-a',
    name: 'creds',
    operation: 'UPDATE',
    userInfo: {},
    object: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds', labels: { app: 'web' } },
      data: { password: 'aHVudGVyMg==', user: 'YWxpY2U=' },
      stringData: { token: 't0k3n' },
    },
    oldObject: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      data: { password: 'b2xk' },
    },
  };
}

describe('compileRedaction()', () => {
  it("replaces every value of a Secret's data and stringData, in object and oldObject, keeping the keys", () => {
    const request = secretRequest();
    const before = structuredClone(request);
    const redacted = compileRedaction([]).request(request);
    assert.deepEqual(redacted.object, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds', labels: { app: 'web' } },
      data: { password: '<redacted>', user: '<redacted>' },
      stringData: { token: '<redacted>' },
    });
    assert.deepEqual(redacted.oldObject, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      data: { password: '<redacted>' },
    });
    assert.deepEqual(request, before, 'the request itself is not changed');
  });

  it('leaves the data of other kinds alone unless a pointer names it; * matches any key or index', () => {
    const request = requestOf(podCreate());
    const redaction = compileRedaction(['/metadata/labels/team', '/spec/containers/*/image', '/no/such/field']);
    const redacted = redaction.request(request);
    const object = redacted.object as { metadata: { labels: object }; spec: { containers: Array<{ image: string }> } };
    assert.deepEqual(object.metadata.labels, { app: 'web', team: '<redacted>' });
    assert.deepEqual(
      object.spec.containers.map((c) => c.image),
      ['<redacted>', '<redacted>'],
    );
    assert.equal(redacted.oldObject, null);
  });

  it('redacts the values a patch writes at, or around, a redacted path', () => {
    const ops: JsonPatchOperation[] = [
      { op: 'add', path: '/data/password', value: 'bmV3' },
      { op: 'replace', path: '/data', value: { a: 'YQ==', b: 'Yg==' } },
      { op: 'add', path: '/metadata/labels/app', value: 'web' },
      { op: 'remove', path: '/stringData/token' },
      { op: 'add', path: '/metadata/annotations', value: { 'x/token': 's3cret', keep: 'me' } },
    ];
    const redaction = compileRedaction(['/metadata/annotations/x~1token']);
    assert.deepEqual(redaction.patch(secretRequest(), ops), [
      { op: 'add', path: '/data/password', value: '<redacted>' },
      { op: 'replace', path: '/data', value: { a: '<redacted>', b: '<redacted>' } },
      { op: 'add', path: '/metadata/labels/app', value: 'web' },
      { op: 'remove', path: '/stringData/token' },
      { op: 'add', path: '/metadata/annotations', value: { 'x/token': '<redacted>', keep: 'me' } },
    ]);
    assert.deepEqual(ops[1], { op: 'replace', path: '/data', value: { a: 'YQ==', b: 'Yg==' } }, 'not changed');
  });

  it('reads JSON pointer escapes', () => {
    assert.deepEqual(pointerSegments('/metadata/annotations/a~1b~0c'), ['metadata', 'annotations', 'a/b~c']);
  });
});
