/**
 * Finds the PodSpecs inside Kubernetes objects, and their containers, with the paths users see in messages
 * (`spec.template.spec.containers[0]`).
 *
 * The types name the fields the shipped plugins read, but a request may carry anything: every field is
 * `unknown` until narrowed, because a plugin that throws on a malformed object fails the whole request.
 */
import type { KubeObject, Match } from '../../server/plugin-api/index.js';

/** A JSON object (never an array or null). */
export type JsonObject = Record<string, unknown>;

/** Every resource whose objects carry a PodSpec that podSpecsOf reads (groups '', apps, batch). */
export const POD_SPEC_RESOURCES = [
  'pods',
  'deployments',
  'replicasets',
  'statefulsets',
  'daemonsets',
  'jobs',
  'cronjobs',
  'replicationcontrollers',
  'podtemplates',
] as const;

/** A match for CREATE (and UPDATE) of everything that carries a PodSpec, plus extra resources such as subresources. */
export function podSpecMatch(
  operations: ReadonlyArray<'CREATE' | 'UPDATE'>,
  extraResources: readonly string[] = [],
): Match {
  return {
    rules: [
      {
        operations,
        apiGroups: ['', 'apps', 'batch'],
        apiVersions: ['*'],
        resources: [...POD_SPEC_RESOURCES, ...extraResources],
      },
    ],
  };
}

export interface Container extends JsonObject {
  name?: unknown;
  image?: unknown;
  resources?: unknown;
  securityContext?: unknown;
}

export interface PodSpec extends JsonObject {
  containers?: unknown;
  initContainers?: unknown;
  ephemeralContainers?: unknown;
  volumes?: unknown;
  securityContext?: unknown;
  hostNetwork?: unknown;
  hostPID?: unknown;
  hostIPC?: unknown;
}

export type ContainerField = 'containers' | 'initContainers' | 'ephemeralContainers';

export const CONTAINER_FIELDS: readonly ContainerField[] = ['containers', 'initContainers', 'ephemeralContainers'];

/** A PodSpec and its dotted path in the object, e.g. `spec.jobTemplate.spec.template.spec`. */
export interface PodSpecAt {
  readonly spec: PodSpec;
  readonly path: string;
}

/** A container and its path, e.g. `spec.template.spec.initContainers[1]`. */
export interface ContainerAt {
  readonly container: Container;
  readonly path: string;
  readonly field: ContainerField;
}

/** A ContainerAt whose path is only written out when asked for (most callers never read it). */
class FoundContainer implements ContainerAt {
  constructor(
    readonly container: Container,
    readonly field: ContainerField,
    private readonly podPath: string,
    private readonly index: number,
  ) {}

  get path(): string {
    return `${this.podPath}.${this.field}[${this.index}]`;
  }
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `object[key]` when it is the object's own field, else undefined — what `Object.hasOwn` answers, at the
 * price of one read. On `ctx.object` (a view that records writes) a read is much cheaper than `Object.hasOwn`,
 * which has to ask the view for a property descriptor (docs/decisions.md, "The working copy is copied as it is
 * read, and each step's writes are tracked"). A JSON value is never a function,
 * so a function found is inherited (`toString`, `constructor`); `__proto__` is the one inherited object.
 */
export function ownField(object: JsonObject, key: string): unknown {
  const value = object[key];
  if (value === undefined || typeof value === 'function') return undefined;
  return key === '__proto__' && !Object.hasOwn(object, key) ? undefined : value;
}

/** `parent[key]` when it is a JSON object. */
export function objectField(parent: JsonObject, key: string): JsonObject | undefined {
  const value = parent[key];
  return isObject(value) ? value : undefined;
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

/**
 * The PodSpecs of a Pod or a workload (at most one today; a list keeps callers simple for DELETE and for
 * kinds without one). Kinds are recognised by apiVersion group and kind, so a custom resource that happens
 * to be called `Job` is left alone.
 */
export function podSpecsOf(object: KubeObject | null | undefined): PodSpecAt[] {
  if (!isObject(object) || typeof object.kind !== 'string') return [];
  const location = POD_SPEC_LOCATIONS.get(object.kind);
  const group = apiGroupOf(object.apiVersion);
  if (!location || group === undefined || !location.groups.includes(group)) return [];
  let node: unknown = object;
  for (const key of location.path) node = isObject(node) ? node[key] : undefined;
  return isObject(node) ? [{ spec: node, path: location.dotted }] : [];
}

/** The containers of one PodSpec; entries that are not objects are skipped but keep their index in paths. */
export function containersOf(pod: PodSpecAt, fields: readonly ContainerField[] = CONTAINER_FIELDS): ContainerAt[] {
  // Loops rather than flatMap: every mutating review of a workload walks its containers.
  const found: ContainerAt[] = [];
  for (const field of fields) {
    const list = pod.spec[field];
    if (!Array.isArray(list)) continue;
    for (let index = 0; index < list.length; index++) {
      const container: unknown = list[index];
      if (isObject(container)) found.push(new FoundContainer(container, field, pod.path, index));
    }
  }
  return found;
}

/**
 * Calls `visit` with every container of every PodSpec in `object`, for a plugin that needs no paths: no list
 * and no object per container (a Pod may have tens of thousands).
 */
export function forEachContainer(
  object: KubeObject | null | undefined,
  fields: readonly ContainerField[],
  visit: (container: Container) => void,
): void {
  for (const pod of podSpecsOf(object)) {
    for (const field of fields) {
      const list = pod.spec[field];
      if (!Array.isArray(list)) continue;
      for (let index = 0; index < list.length; index++) {
        const container: unknown = list[index];
        if (isObject(container)) visit(container);
      }
    }
  }
}

/** Every container of every PodSpec in `object`. */
export function containersIn(
  object: KubeObject | null | undefined,
  fields: readonly ContainerField[] = CONTAINER_FIELDS,
): ContainerAt[] {
  const pods = podSpecsOf(object);
  // The one PodSpec a workload has skips flatMap (docs/decisions.md, "`containersIn`: no `flatMap` for the one
  // PodSpec", which also says why the measurement no longer shows a gain).
  return pods.length === 1 ? containersOf(pods[0]!, fields) : pods.flatMap((pod) => containersOf(pod, fields));
}
