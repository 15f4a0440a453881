/**
 * The rotation decision as a pure function: the Secret's state + the time + whether the webhook
 * configurations trust the current bundle → the one step due now. Every replica runs it against the same
 * Secret; whichever writes first wins (optimistic concurrency), the others re-read and decide again.
 *
 * Phases of a CA rotation (the old and the new CA are both trusted for the whole time either one's
 * certificate may be served):
 *   steady   bundle = [signing]                 → stage when the CA nears expiry (or on request)
 *   staged   bundle = [signing, next]           → promote once every webhook carries the bundle and the
 *                                                 propagation delay has passed (apiservers pick it up)
 *   promoted bundle = [old, signing]            → prune after the overlap (every replica serves the new one)
 */
import { subjectAltNameText, type CertificateState, type ParseResult } from './managed-secret.js';
import type { SubjectAltNames } from '../../certs/generate.js';
import type { ManagedCertificateConfig } from '../config/types.js';

/** The lifetimes and delays that drive rotation: the `kube.certificate` settings of the same names. */
export type RotationPolicy = Pick<
  ManagedCertificateConfig,
  | 'caValiditySeconds'
  | 'certValiditySeconds'
  | 'caRenewBeforeSeconds'
  | 'certRenewBeforeSeconds'
  | 'propagationSeconds'
  | 'overlapSeconds'
>;

export interface RotationInput {
  /** undefined: the Secret does not exist. */
  readonly secret: ParseResult | undefined;
  readonly now: Date;
  readonly policy: RotationPolicy;
  readonly sans: SubjectAltNames;
  /** Every configured webhook configuration that exists carries the Secret's ca.crt as caBundle. */
  readonly webhooksTrustBundle: boolean;
}

export type RotationAction =
  | { readonly kind: 'create' }
  | { readonly kind: 'regenerate'; readonly reason: string }
  | { readonly kind: 'stage'; readonly reason: 'ca-expiring' | 'requested' }
  | { readonly kind: 'promote' }
  | { readonly kind: 'prune' }
  | { readonly kind: 'reissue'; readonly reason: 'expiring' | 'sans-changed' }
  | { readonly kind: 'wait'; readonly reason: string; readonly until?: Date };

const seconds = (s: number): number => s * 1000;

/** The step due now (see the module comment). `wait` carries when to look again, when that is known. */
export function decideRotation(input: RotationInput): RotationAction {
  const { secret, now, policy } = input;
  if (!secret) return { kind: 'create' };
  // Choice: unusable content is replaced by a fresh CA and certificate rather than refused. The Secret is
  // the gateway's own; refusing would leave a gateway that cannot start (and, with failurePolicy Fail, a
  // cluster that cannot admit anything) until a person fixes it. The reason is logged at warn.
  if (!secret.ok) return { kind: 'regenerate', reason: secret.problem };
  const state = secret.state;
  const t = now.getTime();

  const phase = phaseOf(state);
  if (phase === 'staged') {
    const due = new Date(state.stagedAt!.getTime() + seconds(policy.propagationSeconds));
    if (!input.webhooksTrustBundle)
      return { kind: 'wait', reason: 'webhook configurations do not carry the bundle yet' };
    if (t < due.getTime()) return { kind: 'wait', reason: 'propagation delay', until: due };
    return { kind: 'promote' };
  }
  if (phase === 'promoted') {
    // No promotedAt but extra CAs: someone added them by hand; the gateway owns the bundle, prune at once.
    const due = new Date((state.promotedAt?.getTime() ?? 0) + seconds(policy.overlapSeconds));
    if (state.promotedAt && t < due.getTime()) return { kind: 'wait', reason: 'overlap', until: due };
    return { kind: 'prune' };
  }
  const caRenewAt = state.signing.notAfter.getTime() - seconds(policy.caRenewBeforeSeconds);
  if (state.rotateRequested) return { kind: 'stage', reason: 'requested' };
  if (t >= caRenewAt) return { kind: 'stage', reason: 'ca-expiring' };
  if (state.serving.subjectAltName !== subjectAltNameText(input.sans))
    return { kind: 'reissue', reason: 'sans-changed' };
  const certRenewAt = state.serving.notAfter.getTime() - seconds(policy.certRenewBeforeSeconds);
  // A reissued certificate is capped at the CA's notAfter: reissue only when that gains time, otherwise the
  // CA rotation (which comes first) brings the new certificate.
  const reissuedUntil = Math.min(t + seconds(policy.certValiditySeconds), state.signing.notAfter.getTime());
  if (t >= certRenewAt && reissuedUntil - state.serving.notAfter.getTime() >= 1000) {
    return { kind: 'reissue', reason: 'expiring' };
  }
  const nextCheck = Math.min(caRenewAt, certRenewAt > t ? certRenewAt : caRenewAt);
  return { kind: 'wait', reason: 'steady', until: new Date(nextCheck) };
}

/** The phase name for logs and tests. */
export function phaseOf(state: CertificateState): 'staged' | 'promoted' | 'steady' {
  if (state.next) return 'staged';
  if (state.bundle.length > 1 || state.promotedAt) return 'promoted';
  return 'steady';
}
