/**
 * The answer schemas of each review version (in the OpenAPI document) and the gateway's check of a provider's
 * answer (providers/provider-response.ts) agree: an answer the schema accepts is one the gateway takes, and the
 * answers the gateway refuses the schema refuses too, except for what one document cannot know (the call's
 * uid, the handler's phase) or only annotates (the patch's decoded content).
 */
import assert from 'node:assert/strict';
import { ADMISSION_V1, ADMISSION_V1BETA1, type AdmissionApiVersion } from '../../../server/admission/types.js';
import { openApiDocument } from '../../../server/protocol/openapi.js';
import { verifyProviderResponse } from '../../../server/providers/provider-response.js';
import { documentSchemas } from '../../helpers/openapi-schemas.js';

const UID = '5b0b3a1e-4c1f-4b7e-9a55-0f4b0d7f3a10';
const PATCH = Buffer.from(JSON.stringify([{ op: 'add', path: '/metadata/labels/team', value: 'a' }])).toString(
  'base64',
);

const v1 = (response: Record<string, unknown>) => ({
  apiVersion: ADMISSION_V1,
  kind: 'AdmissionReview',
  response: { uid: UID, ...response },
});
const v1beta1 = (response: Record<string, unknown>, envelope: Record<string, unknown> = {}) => ({
  apiVersion: ADMISSION_V1BETA1,
  kind: 'AdmissionReview',
  ...envelope,
  response: { uid: UID, ...response },
});

interface Answer {
  readonly version: AdmissionApiVersion;
  readonly body: unknown;
}

const ACCEPTED: Readonly<Record<string, Answer>> = {
  'v1: allowed': { version: ADMISSION_V1, body: v1({ allowed: true }) },
  'v1: denied with a status': {
    version: ADMISSION_V1,
    body: v1({ allowed: false, status: { code: 403, message: 'no', reason: 'Forbidden', status: 'Failure' } }),
  },
  'v1: a patch with its type': {
    version: ADMISSION_V1,
    body: v1({ allowed: true, patch: PATCH, patchType: 'JSONPatch' }),
  },
  'v1: warnings and audit annotations': {
    version: ADMISSION_V1,
    body: v1({ allowed: true, warnings: ['careful'], auditAnnotations: { scanned: 'true' } }),
  },
  'v1beta1: without apiVersion and kind': {
    version: ADMISSION_V1BETA1,
    body: { response: { uid: UID, allowed: true } },
  },
  'v1beta1: in apiVersion v1': { version: ADMISSION_V1BETA1, body: v1({ allowed: true }) },
  'v1beta1: a patch without its type': { version: ADMISSION_V1BETA1, body: v1beta1({ allowed: true, patch: PATCH }) },
};

const REFUSED: Readonly<Record<string, Answer>> = {
  'v1: no response': { version: ADMISSION_V1, body: { apiVersion: ADMISSION_V1, kind: 'AdmissionReview' } },
  'v1: no allowed': { version: ADMISSION_V1, body: v1({}) },
  'v1: allowed as text': { version: ADMISSION_V1, body: v1({ allowed: 'true' }) },
  'v1: no uid': {
    version: ADMISSION_V1,
    body: { apiVersion: ADMISSION_V1, kind: 'AdmissionReview', response: { allowed: true } },
  },
  'v1: apiVersion v1beta1': {
    version: ADMISSION_V1,
    body: { ...v1({ allowed: true }), apiVersion: ADMISSION_V1BETA1 },
  },
  'v1: no kind': { version: ADMISSION_V1, body: { apiVersion: ADMISSION_V1, response: { uid: UID, allowed: true } } },
  'v1: a patch without its type': { version: ADMISSION_V1, body: v1({ allowed: true, patch: PATCH }) },
  'v1: a patch type without a patch': { version: ADMISSION_V1, body: v1({ allowed: true, patchType: 'JSONPatch' }) },
  'v1: another patch type': {
    version: ADMISSION_V1,
    body: v1({ allowed: true, patch: PATCH, patchType: 'JSONMergePatch' }),
  },
  'v1: warnings that are not strings': { version: ADMISSION_V1, body: v1({ allowed: true, warnings: [1] }) },
  'v1: an audit annotation that is not a string': {
    version: ADMISSION_V1,
    body: v1({ allowed: true, auditAnnotations: { n: 1 } }),
  },
  'v1beta1: an unknown apiVersion': {
    version: ADMISSION_V1BETA1,
    body: v1beta1({ allowed: true }, { apiVersion: 'admission.k8s.io/v2' }),
  },
  'v1beta1: no allowed': { version: ADMISSION_V1BETA1, body: v1beta1({}) },
  'v1beta1: a body that is a list': { version: ADMISSION_V1BETA1, body: [v1beta1({ allowed: true })] },
};

/** The gateway's verdict on a mutating handler's answer: undefined when it takes it, else why not. */
function gatewayRefusal({ version, body }: Answer, mutating = true): string | undefined {
  try {
    verifyProviderResponse(JSON.stringify(body), { uid: UID, apiVersion: version, mutating });
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('the answer schemas and the gateway’s check of an answer', () => {
  const schemas = documentSchemas(openApiDocument());
  const schemaOf = (version: AdmissionApiVersion) =>
    schemas.component(version === ADMISSION_V1 ? 'AdmissionReviewResponseV1' : 'AdmissionReviewResponseV1beta1');

  for (const [what, answer] of Object.entries(ACCEPTED)) {
    it(`both take ${what}`, () => {
      const validate = schemaOf(answer.version);
      assert.equal(gatewayRefusal(answer), undefined);
      assert.ok(validate(answer.body), schemas.errors(validate));
    });
  }

  for (const [what, answer] of Object.entries(REFUSED)) {
    it(`both refuse ${what}`, () => {
      assert.notEqual(gatewayRefusal(answer), undefined, 'the gateway took it');
      assert.equal(schemaOf(answer.version)(answer.body), false, 'the schema took it');
    });
  }

  it('leave to the gateway what one document cannot know: the uid of the call, the phase, the patch’s content', () => {
    const otherUid: Answer = {
      version: ADMISSION_V1,
      body: { ...v1({ allowed: true }), response: { uid: 'x', allowed: true } },
    };
    const validatingPatch: Answer = {
      version: ADMISSION_V1,
      body: v1({ allowed: true, patch: PATCH, patchType: 'JSONPatch' }),
    };
    const notAPatch: Answer = {
      version: ADMISSION_V1,
      body: v1({ allowed: true, patch: Buffer.from('{}').toString('base64'), patchType: 'JSONPatch' }),
    };
    assert.match(gatewayRefusal(otherUid) ?? '', /expected response.uid/);
    assert.match(gatewayRefusal(validatingPatch, false) ?? '', /validating webhook may not return response.patch/);
    assert.match(gatewayRefusal(notAPatch) ?? '', /not a usable JSON patch/);
    for (const answer of [otherUid, validatingPatch, notAPatch]) assert.ok(schemaOf(ADMISSION_V1)(answer.body));
  });
});
