/**
 * The cluster's admission policy kinds as the gateway reads them (fromCluster: watched in cluster mode, listed by
 * `audit`), and the discovery that says which versions a cluster serves.
 */
import { KubernetesObjectApi, type V1APIResource } from '@kubernetes/client-node';
import { statusCode } from './kube-errors.js';

export const POLICY_GROUP = 'admissionregistration.k8s.io';

/** The four kinds, and the versions each is looked for in, preferred first. */
export const POLICY_KINDS = [
  { kind: 'ValidatingAdmissionPolicy', versions: ['v1'] },
  { kind: 'ValidatingAdmissionPolicyBinding', versions: ['v1'] },
  { kind: 'MutatingAdmissionPolicy', versions: ['v1', 'v1beta1'] },
  { kind: 'MutatingAdmissionPolicyBinding', versions: ['v1', 'v1beta1'] },
] as const;

/** Discovery, from client-node's own cached lookup of a group version's resources. */
export class ResourceDiscovery extends KubernetesObjectApi {
  /** The resource serving `kind` at `apiVersion`, or undefined when the group version or kind is not served. */
  async find(apiVersion: string, kind: string): Promise<V1APIResource | undefined> {
    try {
      return await this.resource(apiVersion, kind);
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
  }
}

/** The version and resource serving a policy kind, or undefined when none of its versions is served. */
export async function servedPolicyKind(
  discovery: ResourceDiscovery,
  { kind, versions }: (typeof POLICY_KINDS)[number],
): Promise<{ version: string; plural: string } | undefined> {
  for (const version of versions) {
    const resource = await discovery.find(`${POLICY_GROUP}/${version}`, kind);
    if (resource) return { version, plural: resource.name };
  }
  return undefined;
}

/** The REST path of a group version: `/api/v1` for the core group, `/apis/<group>/<version>` for the others. */
export function apiPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}
