/**
 * Identities the authorize chain never sees, whatever it says: the control plane's own and the gateway's, so
 * that no chain can lock the cluster out of itself. A name ending in `*` is a prefix.
 */
import type { AuthorizationAttributes } from './attributes.js';

export interface Exclusions {
  readonly users: readonly string[];
  readonly groups: readonly string[];
}

/** system:masters can always repair the cluster; nodes and the control plane's components keep it running. */
export const DEFAULT_EXCLUSIONS: Exclusions = {
  groups: ['system:masters', 'system:nodes'],
  users: [
    'system:apiserver',
    'system:kube-controller-manager',
    'system:kube-scheduler',
    'system:kube-proxy',
    'system:serviceaccount:kube-system:*',
  ],
};

/** `DEFAULT_EXCLUSIONS` and the ServiceAccounts of the gateway's own namespace (its watches among them). */
export function exclusionsFor(gatewayNamespace: string): Exclusions {
  return {
    groups: DEFAULT_EXCLUSIONS.groups,
    users: [...DEFAULT_EXCLUSIONS.users, `system:serviceaccount:${gatewayNamespace}:*`],
  };
}

function matcher(names: readonly string[]): (name: string) => boolean {
  const exact = new Set(names.filter((n) => !n.endsWith('*')));
  const prefixes = names.filter((n) => n.endsWith('*')).map((n) => n.slice(0, -1));
  return (name) => exact.has(name) || prefixes.some((prefix) => name.startsWith(prefix));
}

/** Whether a request is by an excluded identity. */
export function compileExclusions(exclusions: Exclusions): (attributes: AuthorizationAttributes) => boolean {
  const user = matcher(exclusions.users);
  const group = matcher(exclusions.groups);
  return (a) => user(a.user) || a.groups.some(group);
}
