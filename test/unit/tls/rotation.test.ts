import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { generateCa, issueServingCertificate } from '../../../certs/generate.js';
import {
  ANNOTATIONS,
  SECRET_KEYS,
  initialContent,
  parseManagedSecret,
  promoteContent,
  pruneContent,
  reissueContent,
  stageContent,
  type CertificateState,
  type SecretContent,
} from '../../../server/tls/managed-secret.js';
import { decideRotation, phaseOf, type RotationPolicy } from '../../../server/tls/rotation.js';

const SANS = { dnsNames: ['gw.ns.svc', 'localhost'], ipAddresses: ['127.0.0.1', '::1'] };
const POLICY: RotationPolicy = {
  caValiditySeconds: 1000,
  certValiditySeconds: 500,
  caRenewBeforeSeconds: 300,
  certRenewBeforeSeconds: 100,
  propagationSeconds: 10,
  overlapSeconds: 20,
};
const T0 = Date.parse('2030-01-01T00:00:00Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const params = (seconds: number, policy: RotationPolicy = POLICY) => ({
  sans: SANS,
  caValiditySeconds: policy.caValiditySeconds,
  certValiditySeconds: policy.certValiditySeconds,
  now: at(seconds),
});

function stateOf(content: SecretContent): CertificateState {
  const parsed = parseManagedSecret(content);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.problem);
  return parsed.state;
}

function decide(content: SecretContent | undefined, seconds: number, webhooksTrustBundle = true, policy = POLICY) {
  return decideRotation({
    secret: content && parseManagedSecret(content),
    now: at(seconds),
    policy,
    sans: SANS,
    webhooksTrustBundle,
  });
}

const edit = (content: SecretContent, data: Record<string, string | undefined>): SecretContent => {
  const merged: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...content.data, ...data })) if (v !== undefined) merged[k] = v;
  return { data: merged, annotations: content.annotations };
};

describe('certificate rotation decision', () => {
  let initial: SecretContent;
  before(() => {
    initial = initialContent(params(0));
  });

  describe('without a usable Secret', () => {
    it('creates one when it does not exist', () => {
      assert.deepEqual(decide(undefined, 0), { kind: 'create' });
    });

    const broken: [string, (c: SecretContent) => SecretContent, string][] = [
      ['garbage in tls.crt', (c) => edit(c, { [SECRET_KEYS.cert]: 'hello' }), 'tls.crt is not a PEM certificate ('],
      ['a missing tls.key', (c) => edit(c, { [SECRET_KEYS.key]: undefined }), 'tls.key is missing'],
      [
        'a key of another certificate',
        (c) => edit(c, { [SECRET_KEYS.key]: c.data[SECRET_KEYS.signingKey] }),
        'tls.key does not belong to tls.crt',
      ],
      [
        'a serving certificate of another CA',
        (c) => {
          const other = issueServingCertificate({
            ca: generateCa({ validitySeconds: 100 }),
            sans: SANS,
            validitySeconds: 50,
          });
          return edit(c, { [SECRET_KEYS.cert]: other.cert, [SECRET_KEYS.key]: other.key });
        },
        'tls.crt was not signed by signing-ca.crt',
      ],
      [
        'a bundle without the signing CA',
        (c) => edit(c, { [SECRET_KEYS.bundle]: generateCa({ validitySeconds: 100 }).cert }),
        'ca.crt does not contain signing-ca.crt',
      ],
      [
        'a staged CA without its timestamp',
        (c) => {
          const staged = stageContent(stateOf(c), params(1));
          return { data: staged.data, annotations: {} };
        },
        `next-ca.crt is staged but ${ANNOTATIONS.stagedAt} is missing`,
      ],
      [
        'an invalid timestamp',
        (c) => ({ data: c.data, annotations: { [ANNOTATIONS.promotedAt]: 'yesterday' } }),
        `annotation ${ANNOTATIONS.promotedAt} is not a timestamp: "yesterday"`,
      ],
    ];
    for (const [name, mangle, problem] of broken) {
      it(`regenerates a Secret with ${name}, saying why`, () => {
        const action = decide(mangle(initial), 1);
        assert.equal(action.kind, 'regenerate');
        assert.ok(action.kind === 'regenerate' && action.reason.startsWith(problem), JSON.stringify(action));
      });
    }
  });

  describe('in the steady phase', () => {
    it('waits until the serving certificate is due, when it is due before the CA', () => {
      assert.equal(phaseOf(stateOf(initial)), 'steady');
      assert.deepEqual(decide(initial, 1), { kind: 'wait', reason: 'steady', until: at(400) });
    });

    it('reissues the serving certificate from the same CA when it nears expiry', () => {
      assert.deepEqual(decide(initial, 400), { kind: 'reissue', reason: 'expiring' });
      const before = stateOf(initial);
      const after = stateOf(reissueContent(before, params(400)));
      assert.equal(after.signing.fingerprint256, before.signing.fingerprint256);
      assert.notEqual(after.serving.fingerprint256, before.serving.fingerprint256);
      // 400 + 500 s, not capped: the CA lives until 1000 s.
      assert.deepEqual(after.serving.notAfter, at(900));
      assert.deepEqual(decide(reissueContent(before, params(400)), 401), {
        kind: 'wait',
        reason: 'steady',
        until: at(700),
      });
    });

    it('does not reissue a certificate already capped at its CA expiry (the CA rotation comes first)', () => {
      const policy = { ...POLICY, certRenewBeforeSeconds: 400 };
      const capped = reissueContent(stateOf(initial), params(650, policy));
      assert.deepEqual(stateOf(capped).serving.notAfter, at(1000));
      assert.deepEqual(decide(capped, 690, true, policy), { kind: 'wait', reason: 'steady', until: at(700) });
    });

    it('reissues when the configured SANs changed', () => {
      const action = decideRotation({
        secret: parseManagedSecret(initial),
        now: at(1),
        policy: POLICY,
        sans: { dnsNames: ['other.ns.svc'], ipAddresses: [] },
        webhooksTrustBundle: true,
      });
      assert.deepEqual(action, { kind: 'reissue', reason: 'sans-changed' });
    });

    it('stages a new CA when the CA nears expiry', () => {
      assert.deepEqual(decide(initial, 700), { kind: 'stage', reason: 'ca-expiring' });
    });

    it('stages a new CA at once when the rotate-ca annotation asks for it', () => {
      const requested = { data: initial.data, annotations: { [ANNOTATIONS.rotate]: 'now' } };
      assert.deepEqual(decide(requested, 1), { kind: 'stage', reason: 'requested' });
      // Staging drops the request, so it happens once.
      assert.equal(stageContent(stateOf(requested), params(1)).annotations[ANNOTATIONS.rotate], undefined);
    });
  });

  describe('through a whole CA rotation', () => {
    it('stages, promotes after propagation, prunes after the overlap, keeping old and new trusted between', () => {
      const old = stateOf(initial);
      const staged = stageContent(old, params(700));
      const s = stateOf(staged);
      assert.equal(phaseOf(s), 'staged');
      assert.equal(s.serving.fingerprint256, old.serving.fingerprint256, 'still serving the old certificate');
      assert.deepEqual(
        s.bundle.map((c) => c.fingerprint256),
        [old.signing.fingerprint256, s.next!.fingerprint256],
      );

      // Another replica that re-reads after this write (its own write got 409) does not stage again.
      assert.deepEqual(decide(staged, 701, false), {
        kind: 'wait',
        reason: 'webhook configurations do not carry the bundle yet',
      });
      assert.deepEqual(decide(staged, 709, true), { kind: 'wait', reason: 'propagation delay', until: at(710) });
      assert.deepEqual(decide(staged, 711, false), {
        kind: 'wait',
        reason: 'webhook configurations do not carry the bundle yet',
      });
      assert.deepEqual(decide(staged, 710, true), { kind: 'promote' });

      const promoted = promoteContent(s, params(710));
      const p = stateOf(promoted);
      assert.equal(phaseOf(p), 'promoted');
      assert.equal(p.signing.fingerprint256, s.next!.fingerprint256);
      assert.ok(new X509Certificate(p.serving.pem).checkIssued(new X509Certificate(s.next!.pem)));
      assert.deepEqual(
        p.bundle.map((c) => c.fingerprint256),
        [old.signing.fingerprint256, s.next!.fingerprint256],
        'both CAs trusted during the overlap',
      );
      assert.deepEqual(decide(promoted, 729), { kind: 'wait', reason: 'overlap', until: at(730) });
      assert.deepEqual(decide(promoted, 730), { kind: 'prune' });

      const pruned = pruneContent(p);
      const q = stateOf(pruned);
      assert.equal(phaseOf(q), 'steady');
      assert.deepEqual(
        q.bundle.map((c) => c.fingerprint256),
        [s.next!.fingerprint256],
      );
      assert.equal(q.serving.fingerprint256, p.serving.fingerprint256);
      assert.deepEqual(pruned.annotations, {});
      // The new CA lives 1000 s from 700 s; its certificate 500 s from 710 s.
      assert.deepEqual(decide(pruned, 731), { kind: 'wait', reason: 'steady', until: at(1110) });
    });

    it('prunes CAs added to the bundle by hand, without a rotation in progress', () => {
      const extra = generateCa({ validitySeconds: 100 }).cert;
      const edited = edit(initial, { [SECRET_KEYS.bundle]: `${initial.data[SECRET_KEYS.bundle]}${extra}` });
      assert.deepEqual(decide(edited, 1), { kind: 'prune' });
    });
  });
});
