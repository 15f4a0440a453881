/**
 * Which requests a plugin sees, written as a sentence: `on('deployments', 'statefulsets').create().update()`.
 * The builder produces the same `RuleWithOperations` a webhook configuration holds (and the `manifests`
 * command renders), and it carries the type of the objects those resources hold, so `definePlugin` types
 * `ctx.object` from it.
 *
 * The API groups of built-in resources are filled in (`deployments` → `apps`, in the order the resources are
 * named); a custom resource needs `.groups(...)`. API versions default to every version (`*`).
 */
import { groupOfResource } from '../admission/built-in-kinds.js';
import type { ObjectFor, ResourceName } from './objects.js';
import type { KubeObject, LabelSelector, Match, Operation, RuleWithOperations } from './types.js';

type Scope = NonNullable<RuleWithOperations['scope']>;

interface RuleDraft {
  readonly resources: readonly string[];
  readonly operations: readonly (Operation | '*')[];
  readonly groups?: readonly string[];
  readonly versions: readonly string[];
  readonly scope?: Scope;
}

/** Thrown when a match cannot be turned into webhook rules; the registry reports it with the plugin's name. */
export class MatchDefinitionError extends Error {
  override readonly name = 'MatchDefinitionError';
}

/**
 * A match under construction. Every method returns a new builder; the last rule (the one `on` or `or`
 * started) is the one `create()`, `groups()`, … change. `T` is the type of the objects it matches.
 */
export class MatchBuilder<T extends object = KubeObject> {
  /** Never set: it only carries `T` for type inference. */
  declare readonly objectType?: T;

  constructor(
    private readonly drafts: readonly RuleDraft[],
    private readonly selectors: Pick<Match, 'namespaceSelector' | 'objectSelector'> = {},
  ) {}

  create(): MatchBuilder<T> {
    return this.withOperation('CREATE');
  }
  update(): MatchBuilder<T> {
    return this.withOperation('UPDATE');
  }
  delete(): MatchBuilder<T> {
    return this.withOperation('DELETE');
  }
  connect(): MatchBuilder<T> {
    return this.withOperation('CONNECT');
  }
  /** Every operation (`*`). */
  anyOperation(): MatchBuilder<T> {
    return this.withOperation('*');
  }

  /** The API groups of the last rule (`''` is the core group, `*` every group), instead of the inferred ones. */
  groups(...groups: string[]): MatchBuilder<T> {
    return this.withLast({ groups });
  }

  /** The API versions of the last rule (default `*`). */
  versions(...versions: string[]): MatchBuilder<T> {
    return this.withLast({ versions });
  }

  /** `Namespaced` or `Cluster` objects only, for the last rule (default both). */
  scope(scope: Scope): MatchBuilder<T> {
    return this.withLast({ scope });
  }

  /** Adds the rules of `other` (its selectors are ignored: a match has one of each). */
  or<U extends object>(other: MatchBuilder<U>): MatchBuilder<T | U> {
    return new MatchBuilder<T | U>([...this.drafts, ...other.drafts], this.selectors);
  }

  /** Only objects in namespaces whose labels match (the webhook's `namespaceSelector`). */
  namespaceSelector(selector: LabelSelector): MatchBuilder<T> {
    return new MatchBuilder<T>(this.drafts, { ...this.selectors, namespaceSelector: selector });
  }

  /** Only objects whose own labels match (the webhook's `objectSelector`). */
  objectSelector(selector: LabelSelector): MatchBuilder<T> {
    return new MatchBuilder<T>(this.drafts, { ...this.selectors, objectSelector: selector });
  }

  /** The match as a webhook configuration spells it; throws `MatchDefinitionError` when it cannot be one. */
  toMatch(): Match {
    const rules = this.drafts.map((draft, index) => toRule(draft, index));
    return Object.freeze({ rules: Object.freeze(rules), ...this.selectors });
  }

  private withOperation(operation: Operation | '*'): MatchBuilder<T> {
    const last = this.drafts[this.drafts.length - 1]!;
    if (last.operations.includes(operation)) return this;
    return this.withLast({ operations: [...last.operations, operation] });
  }

  private withLast(change: Partial<RuleDraft>): MatchBuilder<T> {
    const last = this.drafts[this.drafts.length - 1]!;
    return new MatchBuilder<T>([...this.drafts.slice(0, -1), { ...last, ...change }], this.selectors);
  }
}

function toRule(draft: RuleDraft, index: number): RuleWithOperations {
  const named = `rule ${index + 1} (${draft.resources.join(', ')})`;
  if (draft.operations.length === 0) {
    throw new MatchDefinitionError(`${named} has no operation: add .create(), .update(), .delete(), .connect()`);
  }
  const rule: RuleWithOperations = {
    operations: Object.freeze([...draft.operations]),
    apiGroups: Object.freeze([...(draft.groups ?? inferredGroups(draft.resources, named))]),
    apiVersions: Object.freeze([...draft.versions]),
    resources: Object.freeze([...draft.resources]),
    ...(draft.scope ? { scope: draft.scope } : {}),
  };
  return Object.freeze(rule);
}

/** The groups of the named resources, each once, in the order the resources are named. */
function inferredGroups(resources: readonly string[], named: string): string[] {
  if (resources.some((r) => r === '*' || r.startsWith('*/'))) return ['*'];
  const groups: string[] = [];
  for (const resource of resources) {
    const group = groupOfResource(resource);
    if (group === undefined) {
      throw new MatchDefinitionError(
        `${named}: "${resource}" is not a built-in resource, so its API group is unknown: add .groups('your.group')`,
      );
    }
    if (!groups.includes(group)) groups.push(group);
  }
  return groups;
}

/**
 * Starts a match on `resources`: plural names as in a webhook rule (`pods`, `deployments`), a subresource
 * (`pods/ephemeralcontainers`), or `*` for every resource. Follow it with the operations.
 */
export function on<const R extends readonly ResourceName[]>(...resources: R): MatchBuilder<ObjectFor<R[number]>> {
  if (resources.length === 0) throw new MatchDefinitionError('on() needs at least one resource');
  return new MatchBuilder([{ resources, operations: [], versions: ['*'] }]);
}

/** Every resource whose objects carry a PodSpec: Pods and the workloads that template them. */
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

/**
 * A match on every resource that carries a PodSpec (see `POD_SPEC_RESOURCES`), plus `extra` resources of
 * those groups (e.g. `pods/ephemeralcontainers`, so that `kubectl debug` is covered).
 */
export function podSpecResources<const X extends readonly ResourceName[] = []>(
  ...extra: X
): MatchBuilder<ObjectFor<(typeof POD_SPEC_RESOURCES)[number] | X[number]>> {
  return on(...POD_SPEC_RESOURCES, ...extra);
}

/** The type of the objects a match written with the builder sees (`KubeObject` for a literal match). */
export type MatchedObject<M> = M extends MatchBuilder<infer T> ? T : KubeObject;

/** A plugin's `match` as written: a builder, or the webhook configuration's shape itself. */
export type MatchSpec<T extends object = KubeObject> = MatchBuilder<T> | Match;

/** The webhook-configuration shape of a match, whichever way it was written. */
export function toMatch(spec: MatchSpec<object>): Match {
  return spec instanceof MatchBuilder ? spec.toMatch() : spec;
}
