/**
 * Finds the PodSpecs inside Pods and workloads, and their containers, with the paths users see in messages
 * (`spec.template.spec.containers[0]`).
 *
 * Kinds are recognised by API group and kind, so a custom resource that happens to be called `Job` is left
 * alone. A list or entry of the wrong type (a client that is not the apiserver can send anything) is skipped
 * rather than thrown on; an entry skipped keeps its index in the paths of the others.
 */
import { isObject, type KubeObject, type PodSpec, type Received } from '../../server/plugin-api/index.js';
import type { V1Container, V1EphemeralContainer } from '@kubernetes/client-node';

/** A container of any of the three lists: the fields the lists share are typed alike. */
export type AnyContainer = Received<V1Container> | Received<V1EphemeralContainer>;

export type ContainerField = 'containers' | 'initContainers' | 'ephemeralContainers';

export const CONTAINER_FIELDS: readonly ContainerField[] = ['containers', 'initContainers', 'ephemeralContainers'];

/** A PodSpec and its dotted path in the object, e.g. `spec.jobTemplate.spec.template.spec`. */
export interface PodSpecAt {
  readonly spec: PodSpec;
  readonly path: string;
}

/** A container, its list and index, and its path, e.g. `spec.template.spec.initContainers[1]`. */
export interface ContainerAt {
  readonly container: AnyContainer;
  readonly path: string;
  readonly field: ContainerField;
  readonly index: number;
}

/** A ContainerAt whose path is only written out when asked for (most callers never read it). */
class FoundContainer implements ContainerAt {
  constructor(
    readonly container: AnyContainer,
    readonly field: ContainerField,
    private readonly podPath: string,
    readonly index: number,
  ) {}

  get path(): string {
    return `${this.podPath}.${this.field}[${this.index}]`;
  }
}

const TEMPLATE_SPEC = ['spec', 'template', 'spec'];

interface PodSpecLocation {
  readonly groups: readonly string[];
  readonly path: readonly string[];
  /** `path` written out once, as messages show it. */
  readonly dotted: string;
}

const at = (groups: readonly string[], path: readonly string[]): PodSpecLocation => ({
  groups,
  path,
  dotted: path.join('.'),
});

/** Where each workload kind keeps its PodSpec, and the API groups it is served from (extensions: legacy). */
const POD_SPEC_LOCATIONS: ReadonlyMap<string, PodSpecLocation> = new Map([
  ['Pod', at([''], ['spec'])],
  ['PodTemplate', at([''], ['template', 'spec'])],
  ['ReplicationController', at([''], TEMPLATE_SPEC)],
  ['Deployment', at(['apps', 'extensions'], TEMPLATE_SPEC)],
  ['ReplicaSet', at(['apps', 'extensions'], TEMPLATE_SPEC)],
  ['DaemonSet', at(['apps', 'extensions'], TEMPLATE_SPEC)],
  ['StatefulSet', at(['apps'], TEMPLATE_SPEC)],
  ['Job', at(['batch'], TEMPLATE_SPEC)],
  ['CronJob', at(['batch'], ['spec', 'jobTemplate', 'spec', 'template', 'spec'])],
]);

/** `apps/v1` → `apps`, `v1` → `` (the core group). */
function apiGroupOf(apiVersion: unknown): string | undefined {
  if (typeof apiVersion !== 'string' || apiVersion === '') return undefined;
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

/** The PodSpec of a Pod or a workload, with its path; undefined for other kinds and on DELETE. */
export function podSpecOf(object: Readonly<KubeObject> | null | undefined): PodSpecAt | undefined {
  if (!object || typeof object.kind !== 'string') return undefined;
  const location = POD_SPEC_LOCATIONS.get(object.kind);
  const group = apiGroupOf(object.apiVersion);
  if (!location || group === undefined || !location.groups.includes(group)) return undefined;
  let node: unknown = object;
  for (const key of location.path) node = isObject(node) ? node[key] : undefined;
  return isObject(node) ? { spec: node, path: location.dotted } : undefined;
}

/** The containers of one PodSpec. */
export function containersOf(pod: PodSpecAt, fields: readonly ContainerField[] = CONTAINER_FIELDS): ContainerAt[] {
  // Loops rather than flatMap: every mutating review of a workload walks its containers.
  const found: ContainerAt[] = [];
  for (const field of fields) {
    const list: unknown = pod.spec[field];
    if (!Array.isArray(list)) continue;
    for (let index = 0; index < list.length; index++) {
      const container: unknown = list[index];
      if (isObject(container)) found.push(new FoundContainer(container, field, pod.path, index));
    }
  }
  return found;
}

/** Every container of the object's PodSpec, with paths; none for other kinds. */
export function containersIn(
  object: Readonly<KubeObject> | null | undefined,
  fields: readonly ContainerField[] = CONTAINER_FIELDS,
): ContainerAt[] {
  const pod = podSpecOf(object);
  return pod ? containersOf(pod, fields) : [];
}

/**
 * Calls `visit` with every container of the object's PodSpec, for a plugin that needs no paths: no list and
 * no object per container (a Pod may have tens of thousands).
 */
export function forEachContainer(
  object: KubeObject | null | undefined,
  fields: readonly ContainerField[],
  visit: (container: AnyContainer) => void,
): void {
  const pod = podSpecOf(object);
  if (!pod) return;
  for (const field of fields) {
    const list: unknown = pod.spec[field];
    if (!Array.isArray(list)) continue;
    for (let index = 0; index < list.length; index++) {
      const container: unknown = list[index];
      if (isObject(container)) visit(container);
    }
  }
}
