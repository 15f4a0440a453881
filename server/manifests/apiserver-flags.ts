/**
 * The kube-apiserver flags that turn the gateway's authorization webhook on, and why each has its value:
 * what `manifests --authorization-kubeconfig` prints on stderr. Pure text; docs/authorization-webhook.md says
 * the same at length.
 */
import type { AuthorizationMode } from './authorization-mode.js';

/**
 * kube-apiserver caches every answer that is not "allowed" this long — the gateway's denials and its "no
 * opinion" alike — per distinct request (user, groups, extra, verb, resource, name, …). 30 s is the
 * apiserver's own default: a change of the gateway's policy reaches every apiserver within 30 s, and a
 * repeated request costs one call per 30 s.
 */
export const CACHE_UNAUTHORIZED_TTL = '30s';
/** The cache of "allowed" answers, which the gateway never gives: the apiserver's default, without effect. */
export const CACHE_AUTHORIZED_TTL = '5m';
/** The SubjectAccessReview version to send: 1.20's default is v1beta1, which spells `groups` as `group`. */
export const WEBHOOK_VERSION = 'v1';

export function apiserverFlags(modes: readonly AuthorizationMode[], controlPlaneFile: string): string[] {
  return [
    `--authorization-mode=${modes.join(',')}`,
    `--authorization-webhook-config-file=${controlPlaneFile}`,
    `--authorization-webhook-version=${WEBHOOK_VERSION}`,
    `--authorization-webhook-cache-authorized-ttl=${CACHE_AUTHORIZED_TTL}`,
    `--authorization-webhook-cache-unauthorized-ttl=${CACHE_UNAUTHORIZED_TTL}`,
  ];
}

/** The lines after the flags: one reason per flag, then what a failed call does. */
export function apiserverFlagReasons(modes: readonly AuthorizationMode[], hadWebhook: boolean): string[] {
  const after = modes.slice(modes.indexOf('Webhook') + 1);
  const placement =
    after.length > 0
      ? `Webhook is placed before ${after.join(', ')} so the gateway can forbid what ${after.length > 1 ? 'they' : 'it'} would allow`
      : 'Webhook is placed last';
  return [
    `  --authorization-mode: the first authorizer with an opinion decides. ${placement} (the authorizers already ` +
      `there keep their order); the gateway only ever answers deny or no opinion, so everything it does not deny ` +
      `is decided as before.` +
      (hadWebhook
        ? ' Webhook was already there: kube-apiserver calls a single authorization webhook, so this file ' +
          'replaces the one it calls now.'
        : ''),
    `  --authorization-webhook-version=${WEBHOOK_VERSION}: the gateway reads v1 and v1beta1, but kube-apiserver ` +
      `sends v1beta1 unless told otherwise.`,
    `  --authorization-webhook-cache-unauthorized-ttl=${CACHE_UNAUTHORIZED_TTL}: every answer that is not "allowed" ` +
      `(the gateway's denials and its "no opinion") is cached this long per distinct request: a policy change ` +
      `reaches every apiserver within ${CACHE_UNAUTHORIZED_TTL}, and a repeated request costs one call per ` +
      `${CACHE_UNAUTHORIZED_TTL}.`,
    `  --authorization-webhook-cache-authorized-ttl=${CACHE_AUTHORIZED_TTL}: the cache of "allowed" answers, which ` +
      `the gateway never gives (the apiserver's default; it has no effect).`,
    '  A call that fails (gateway unreachable, TLS error, an answer it cannot read) is not cached and counts as ' +
      'no opinion: the next authorizers decide, nobody is locked out, and the gateway forbids nothing meanwhile.',
  ];
}
