/**
 * kube-apiserver's `--authorization-mode`: an ordered list of authorizers, asked in turn until one allows or
 * denies (the union authorizer). Where the gateway's Webhook goes in it decides what it can forbid: an
 * authorizer after one that allowed is never asked.
 */
import { didYouMean } from '../base/did-you-mean.js';

/** The authorizers kube-apiserver knows (pkg/kubeapiserver/authorizer/modes), as its flag spells them. */
export const AUTHORIZATION_MODES = ['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'Webhook', 'RBAC', 'Node'] as const;
export type AuthorizationMode = (typeof AUTHORIZATION_MODES)[number];

/** What kubeadm configures, and so what most clusters run before the gateway is added. */
export const DEFAULT_AUTHORIZATION_MODES: readonly AuthorizationMode[] = ['Node', 'RBAC'];

function isAuthorizationMode(value: string): value is AuthorizationMode {
  return (AUTHORIZATION_MODES as readonly string[]).includes(value);
}

/**
 * `Node,RBAC` as a list. The error (a plain string, for the caller to put after the flag's name) names the
 * unknown or repeated authorizer; kube-apiserver refuses both at start.
 */
export function parseAuthorizationModes(value: string): AuthorizationMode[] | string {
  const expected = `expected a comma-separated list of ${AUTHORIZATION_MODES.join(', ')}, got "${value}"`;
  const modes: AuthorizationMode[] = [];
  for (const word of value.split(',').map((w) => w.trim())) {
    if (!isAuthorizationMode(word)) {
      return word === ''
        ? `an empty authorizer name; ${expected}`
        : `unknown authorizer "${word}"${didYouMean(word, AUTHORIZATION_MODES)}; ${expected}`;
    }
    if (modes.includes(word)) return `"${word}" is given twice, got "${value}"`;
    modes.push(word);
  }
  return modes;
}

/**
 * `modes` with Webhook placed before the first authorizer that is not Node, the others kept in their order:
 * every authorizer but Node may allow anyone (RBAC, ABAC, AlwaysAllow), so the gateway's denials must come
 * before them; Node only decides for kubelets, whom the gateway leaves alone anyway, and asking it first
 * keeps their calls off the gateway. A Webhook already there is moved (kube-apiserver calls one webhook).
 */
export function withWebhook(modes: readonly AuthorizationMode[]): AuthorizationMode[] {
  const others = modes.filter((m) => m !== 'Webhook');
  const at = others.findIndex((m) => m !== 'Node');
  const index = at === -1 ? others.length : at;
  return [...others.slice(0, index), 'Webhook', ...others.slice(index)];
}
