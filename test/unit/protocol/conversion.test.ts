import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConversionError, downConvertRequest, upConvertAnswer } from '../../../server/protocol/conversion.js';
import {
  HOOK_API_VERSIONS,
  REVIEW_VERSIONS,
  chooseReviewVersion,
  deprecationNotice,
  isDeprecated,
  reviewApiVersion,
  reviewVersionInfo,
} from '../../../server/protocol/versions.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';

const V1 = 'admission.k8s.io/v1';
const V1BETA1 = 'admission.k8s.io/v1beta1';
const UID = '5f0c8f1e-1d2b-4c3a-9e8f-7a6b5c4d3e2f';
const PATCH = Buffer.from(JSON.stringify([{ op: 'add', path: '/metadata/labels/a', value: 'b' }])).toString('base64');

describe('protocol conversion', () => {
  describe('downConvertRequest()', () => {
    it('sends a v1beta1 handler the same request in a v1beta1 envelope (the two versions carry the same fields)', () => {
      const request = requestOf(podCreate());
      assert.deepEqual(JSON.parse(JSON.stringify(downConvertRequest(request, V1BETA1))), {
        apiVersion: V1BETA1,
        kind: 'AdmissionReview',
        request: JSON.parse(JSON.stringify(request)) as unknown,
      });
      assert.deepEqual(downConvertRequest(request, V1), { apiVersion: V1, kind: 'AdmissionReview', request });
    });
  });

  describe('upConvertAnswer()', () => {
    const mutating = { uid: UID, mutating: true };
    const validating = { uid: UID, mutating: false };

    it('returns a v1 answer as it is: v1 rules are checked after', () => {
      const answer = { apiVersion: 'other', response: { uid: 'x', allowed: true, patch: PATCH } };
      assert.equal(upConvertAnswer(answer, V1, mutating), answer);
    });

    it('fills what v1beta1 may leave out: the envelope, the uid, and patchType beside a patch', () => {
      const answer = { response: { allowed: true, patch: PATCH } };
      assert.deepEqual(upConvertAnswer(answer, V1BETA1, mutating), {
        apiVersion: V1,
        kind: 'AdmissionReview',
        response: { uid: UID, allowed: true, patch: PATCH, patchType: 'JSONPatch' },
      });
      assert.deepEqual(answer, { response: { allowed: true, patch: PATCH } }, 'the answer read is left as it was');
    });

    it('replaces a uid v1beta1 never had to echo, and accepts an answer in v1 to a v1beta1 call', () => {
      const answer = { apiVersion: V1, kind: 'AdmissionReview', response: { uid: 'not-it', allowed: false } };
      assert.deepEqual(upConvertAnswer(answer, V1BETA1, validating), {
        apiVersion: V1,
        kind: 'AdmissionReview',
        response: { uid: UID, allowed: false },
      });
    });

    it('drops the patch of a validating answer, which the apiserver ignores from v1beta1', () => {
      const answer = { apiVersion: V1BETA1, response: { allowed: true, patch: PATCH, patchType: 'JSONPatch' } };
      assert.deepEqual(upConvertAnswer(answer, V1BETA1, validating).response, { uid: UID, allowed: true });
    });

    it('drops a JSONPatch patchType that comes without a patch, and keeps any other for v1 to refuse', () => {
      assert.deepEqual(
        upConvertAnswer({ response: { allowed: true, patchType: 'JSONPatch' } }, V1BETA1, mutating).response,
        { uid: UID, allowed: true },
      );
      assert.deepEqual(
        upConvertAnswer({ response: { allowed: true, patchType: 'MergePatch' } }, V1BETA1, mutating).response,
        { uid: UID, allowed: true, patchType: 'MergePatch' },
      );
    });

    it('refuses an envelope of another API, naming what came', () => {
      assert.throws(
        () => upConvertAnswer({ apiVersion: 'batch/v1', response: { allowed: true } }, V1BETA1, mutating),
        new ConversionError('expected an AdmissionReview, got apiVersion "batch/v1"'),
      );
    });

    it('leaves an answer without a response object for v1 to refuse', () => {
      assert.deepEqual(upConvertAnswer({ response: [] }, V1BETA1, mutating), {
        apiVersion: V1,
        kind: 'AdmissionReview',
        response: [],
      });
    });
  });

  describe('the version catalog', () => {
    it('calls in the first version a provider lists that the gateway speaks', () => {
      assert.equal(chooseReviewVersion(['v1beta1', 'v1']), 'v1beta1');
      assert.equal(chooseReviewVersion(['v1', 'v1beta1']), 'v1');
      assert.equal(reviewApiVersion(chooseReviewVersion(['v1beta1'])), V1BETA1);
    });

    it('says which version is deprecated, until when it is spoken and what to do', () => {
      assert.deepEqual([isDeprecated('v1'), isDeprecated('v1beta1')], [false, true]);
      assert.equal(
        deprecationNotice('v1beta1'),
        'admission.k8s.io/v1beta1 is deprecated since admission-gateway 0.1.0 and spoken until at least 0.4.0: ' +
          'serve admission.k8s.io/v1 and list v1 first in admissionReviewVersions',
      );
      assert.equal(deprecationNotice('v1'), 'admission.k8s.io/v1 is current');
    });
  });
});

describe('the README’s table of versions', () => {
  it('is the catalog the code speaks: each AdmissionReview version, its state, since and until when', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const rows = [...readme.matchAll(/^\| AdmissionReview `([^`]+)` +\| (\w+) +\| ([\d.]+) +\| ([\d.]*) +\|$/gm)].map(
      (m) => m.slice(1),
    );
    assert.deepEqual(
      rows,
      REVIEW_VERSIONS.map((v) => {
        const { apiVersion, deprecation } = reviewVersionInfo(v);
        return [
          apiVersion,
          deprecation ? 'deprecated' : 'current',
          deprecation?.since ?? '0.1.0',
          deprecation?.removalNoSoonerThan ?? '',
        ];
      }),
    );
    assert.match(readme, new RegExp(`^\\| hook API \`${HOOK_API_VERSIONS[0]}\` +\\| current `, 'm'));
  });
});
