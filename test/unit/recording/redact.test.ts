import assert from 'node:assert/strict';
import type { AdmissionRequest, JsonPatchOperation } from '../../../server/admission/types.js';
import { LAST_APPLIED, compileRedaction, pointerSegments } from '../../../server/recording/redact.js';
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

  it("redacts a Secret's data and stringData inside its last-applied-configuration annotation, in both objects", () => {
    const applied = (data: object) =>
      `${JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, ...data })}\n`;
    const request = secretRequest();
    request.object!.metadata!.annotations = {
      [LAST_APPLIED]: applied({ data: { password: 'aHVudGVyMg==' }, stringData: { token: 't0k3n' } }),
    };
    request.oldObject!.metadata!.annotations = { [LAST_APPLIED]: applied({ stringData: { token: 'b2xk' } }) };
    const redacted = compileRedaction([]).request(request);
    assert.deepEqual(
      [redacted.object!.metadata!.annotations, redacted.oldObject!.metadata!.annotations],
      [
        { [LAST_APPLIED]: applied({ data: { password: '<redacted>' }, stringData: { token: '<redacted>' } }) },
        { [LAST_APPLIED]: applied({ stringData: { token: '<redacted>' } }) },
      ],
    );
  });

  it('replaces a last-applied-configuration that is not a JSON object whole; other kinds keep theirs', () => {
    const annotated = (value: string) => {
      const request = secretRequest();
      request.object!.metadata!.annotations = { [LAST_APPLIED]: value, other: value };
      return compileRedaction([]).request(request).object!.metadata!.annotations;
    };
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    assert.deepEqual(
      ['{"data":{"a":"YQ==",', '"stringData"', '[{"data":{"a":"YQ=="}}]', deep].map(annotated),
      ['{"data":{"a":"YQ==",', '"stringData"', '[{"data":{"a":"YQ=="}}]', deep].map((other) => ({
        [LAST_APPLIED]: '<redacted>',
        other,
      })),
    );
    const configMap = requestOf(podCreate());
    const value = JSON.stringify({ data: { a: 'b' } });
    configMap.object!.metadata!.annotations = { [LAST_APPLIED]: value };
    assert.equal(compileRedaction([]).request(configMap).object!.metadata!.annotations![LAST_APPLIED], value);
    // A pointer the operator names is redacted inside the annotation too, whatever the kind.
    assert.equal(
      compileRedaction(['/spec/token']).request(configMap).object!.metadata!.annotations![LAST_APPLIED],
      value,
    );
    configMap.object!.metadata!.annotations = { [LAST_APPLIED]: JSON.stringify({ spec: { token: 'x', keep: 1 } }) };
    assert.equal(
      compileRedaction(['/spec/token']).request(configMap).object!.metadata!.annotations![LAST_APPLIED],
      '{"spec":{"token":"<redacted>","keep":1}}',
    );
  });

  it('redacts the secret content of a last-applied-configuration a patch writes, whole or within annotations', () => {
    const secret = JSON.stringify({ kind: 'Secret', stringData: { token: 't0k3n' } });
    const ops: JsonPatchOperation[] = [
      { op: 'add', path: `/metadata/annotations/${LAST_APPLIED.replace('/', '~1')}`, value: secret },
      { op: 'replace', path: '/metadata/annotations', value: { [LAST_APPLIED]: secret, keep: 'me' } },
      { op: 'add', path: '/metadata', value: { annotations: { [LAST_APPLIED]: 'not json' } } },
      { op: 'test', path: `/metadata/annotations/${LAST_APPLIED.replace('/', '~1')}`, value: secret },
    ];
    const redactedSecret = '{"kind":"Secret","stringData":{"token":"<redacted>"}}';
    assert.deepEqual(compileRedaction([]).patch(secretRequest(), ops), [
      { ...ops[0], value: redactedSecret },
      { ...ops[1], value: { [LAST_APPLIED]: redactedSecret, keep: 'me' } },
      { ...ops[2], value: { annotations: { [LAST_APPLIED]: '<redacted>' } } },
      { ...ops[3], value: redactedSecret },
    ]);
  });

  it('reads JSON pointer escapes', () => {
    assert.deepEqual(pointerSegments('/metadata/annotations/a~1b~0c'), ['metadata', 'annotations', 'a/b~c']);
  });
});
