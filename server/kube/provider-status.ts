/**
 * The status an AdmissionProvider should have, computed from its validation result and its runtime.
 * Condition timestamps move only when a condition's status changes, so an unchanged provider produces an
 * identical status — and the writer skips it (no hot loop on our own watch events).
 */
import type { ProviderStatus } from '../providers/provider-runtime.js';
import { deprecatedSteps } from '../providers/deprecation-report.js';
import { deprecationNotice, reviewApiVersion } from '../protocol/versions.js';
import type {
  AdmissionProvider,
  AdmissionProviderStatus,
  Condition,
  ProviderReferences,
  ProviderResolution,
} from './admission-provider.js';
import { EXTENSIONS_ANNOTATION } from '../extensions/extension-references.js';
import { FORCE_DELETE_ANNOTATION, REFERENCED_FINALIZER } from './provider-finalizer.js';
import type { ReferencingNamespaces } from './reference-index.js';

/** Namespaces a Deleting condition names; the rest are counted. */
export const MAX_NAMED_NAMESPACES = 10;

/** What the status says about the provider's references. */
export interface ReferenceFacts {
  /** The namespaces that reference it; undefined until the namespace cache has synced (the stored count stays). */
  readonly namespaces?: ReferencingNamespaces;
  /** Its deletion is held by the finalizer for those namespaces (read only with `namespaces`). */
  readonly held?: boolean;
}

type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

function condition(
  previous: readonly Condition[] | undefined,
  next: ConditionInput,
  generation: number | undefined,
  now: string,
): Condition {
  const before = previous?.find((c) => c.type === next.type);
  return {
    ...next,
    lastTransitionTime: before && before.status === next.status ? before.lastTransitionTime : now,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
}

/**
 * @param resolution the validation of the resource's current spec
 * @param runtime the running provider's status, when the provider is in the chain (its last valid spec)
 * @param references its referencing namespaces and whether they hold its deletion
 */
export function desiredStatus(
  resource: AdmissionProvider,
  resolution: ProviderResolution,
  runtime: ProviderStatus | undefined,
  now: string,
  references: ReferenceFacts = {},
): AdmissionProviderStatus {
  const generation = resource.metadata.generation;
  const previous = resource.status?.conditions;
  const make = (c: ConditionInput) => condition(previous, c, generation, now);
  const conditions: Condition[] = [];

  if (resolution.error) {
    const running = runtime ? ' The last valid spec keeps running.' : '';
    conditions.push(
      make({
        type: 'Ready',
        status: 'False',
        reason: resolution.error.reason,
        message: `${resolution.error.message}.${running}`,
      }),
    );
  } else if (!runtime) {
    conditions.push(make({ type: 'Ready', status: 'Unknown', reason: 'Pending', message: 'not yet in the chain' }));
  } else if (!runtime.ready) {
    conditions.push(
      make({
        type: 'Ready',
        status: 'False',
        reason: 'NotDiscovered',
        message: runtime.lastError ?? 'discovery has not completed',
      }),
    );
  } else {
    conditions.push(
      make({ type: 'Ready', status: 'True', reason: 'InChain', message: 'the provider is part of the chain' }),
    );
  }

  if (runtime) {
    if (runtime.discovered === undefined) {
      conditions.push(
        make({
          type: 'Discovered',
          status: 'True',
          reason: 'NotRequired',
          message: 'discovery is off; the configured phases are served',
        }),
      );
    } else if (runtime.discovered) {
      conditions.push(
        make({
          type: 'Discovered',
          status: 'True',
          reason: 'Discovered',
          message: `${runtime.handlers.length} handler(s)`,
        }),
      );
    } else {
      conditions.push(
        make({
          type: 'Discovered',
          status: 'False',
          reason: 'DiscoveryFailed',
          message: runtime.lastError ?? 'not yet',
        }),
      );
    }
    const open = runtime.breaker !== 'closed';
    conditions.push(
      make({
        type: 'CircuitOpen',
        status: open ? 'True' : 'False',
        reason: runtime.breaker === 'open' ? 'Open' : runtime.breaker === 'half-open' ? 'HalfOpen' : 'Closed',
        message: open ? 'calls fail fast through the failurePolicy' : 'calls go to the provider',
      }),
    );
  }

  if (runtime) conditions.push(make(deprecatedCondition(runtime)));
  // Until the namespace cache has synced, what is stored stays: a restarting replica does not flap it.
  const deleting = references.namespaces
    ? references.held
      ? make(deletingCondition(references.namespaces))
      : undefined
    : previous?.find((c) => c.type === 'Deleting');
  if (deleting) conditions.push(deleting);

  const namespaces = references.namespaces?.count ?? resource.status?.references?.namespaces;
  const lastError = resolution.error?.message ?? runtime?.lastError;
  const versionOf = new Map(runtime?.versions.map((v) => [v.step, reviewApiVersion(v.version)]));
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
    handlers: (runtime?.handlers ?? []).map((h) => {
      const version = versionOf.get(`${h.name}.${runtime!.name}`);
      return { name: h.name, phase: h.phase, path: h.path, ...(version ? { admissionReviewVersion: version } : {}) };
    }),
    ...(lastError ? { lastError } : {}),
    ...(runtime ? { breaker: runtime.breaker } : {}),
    ...(namespaces !== undefined ? { references: { namespaces } } : {}),
  };
}

/** Deleting: the finalizer holds the deletion for the namespaces named (the first few, sorted). */
function deletingCondition({ count, first }: ReferencingNamespaces): ConditionInput {
  const more = count - first.length;
  const named = `${first.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
  return {
    type: 'Deleting',
    status: 'True',
    reason: 'Referenced',
    message:
      `held by the finalizer ${REFERENCED_FINALIZER}: ${count} namespace(s) reference it in ${EXTENSIONS_ANNOTATION} ` +
      `(${named}) and it keeps serving them; it is deleted once none does, or at once with the annotation ` +
      `${FORCE_DELETE_ANNOTATION}: "true"`,
  };
}

/**
 * Deprecated: True while any of the provider's steps is called in a deprecated AdmissionReview version (the
 * message says which, until when it is spoken, and what to do), False when every call is in a current one.
 */
function deprecatedCondition(runtime: ProviderStatus): ConditionInput {
  if (runtime.versions.length === 0) {
    return {
      type: 'Deprecated',
      status: 'Unknown',
      reason: 'NotDiscovered',
      message: 'the versions its handlers speak are known once discovery succeeds',
    };
  }
  const deprecated = deprecatedSteps(runtime.versions);
  if (deprecated.size === 0) {
    const current = [...new Set(runtime.versions.map((v) => reviewApiVersion(v.version)))].join(', ');
    return { type: 'Deprecated', status: 'False', reason: 'CurrentVersions', message: `calls are made in ${current}` };
  }
  return {
    type: 'Deprecated',
    status: 'True',
    reason: 'DeprecatedVersion',
    message: [...deprecated]
      .map(([version, steps]) => `${steps.join(', ')} called in ${deprecationNotice(version)}`)
      .join('; '),
  };
}

/**
 * Whether writing `next` would change anything (key order insensitive). The objects served
 * (`references.objects`, `windowStart`, `previousWindowObjects`) are left out: the replicas add to them
 * (served-counter.ts), and this writer never writes them.
 */
export function sameStatus(current: AdmissionProviderStatus | undefined, next: AdmissionProviderStatus): boolean {
  return canonical(writtenPart(current ?? {})) === canonical(next);
}

function writtenPart(status: AdmissionProviderStatus): AdmissionProviderStatus {
  if (!status.references) return status;
  const { references, ...rest } = status;
  const written: ProviderReferences = references.namespaces !== undefined ? { namespaces: references.namespaces } : {};
  return Object.keys(written).length > 0 ? { ...rest, references: written } : rest;
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}
