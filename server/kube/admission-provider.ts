/**
 * The AdmissionProvider resource (admissiongateway.io/v1alpha1, cluster-scoped) and its translation into
 * a provider chain entry, validated with the same rules as gateway.yaml's provider entries.
 */
import { STEP_FIELDS, readStepFields } from '../config/entry-fields.js';
import { readMatch } from '../config/match-schema.js';
import { Reader } from '../config/reader.js';
import type { ProviderEntry } from '../config/types.js';
import { MAX_DNS_LABEL_CHARS, isDnsLabel } from '../config/names.js';
import { readProviderFields } from '../config/validate.js';
import { ConfigError, errorMessage } from '../base/errors.js';

export const PROVIDER_GROUP = 'admissiongateway.io';
export const PROVIDER_VERSION = 'v1alpha1';
export const PROVIDER_PLURAL = 'admissionproviders';
/** The resource as client-node's CustomObjectsApi calls name it. */
export const PROVIDER_RESOURCE = { group: PROVIDER_GROUP, version: PROVIDER_VERSION, plural: PROVIDER_PLURAL } as const;
/** `apiVersion` of an AdmissionProvider object. */
export const PROVIDER_API_VERSION = `${PROVIDER_GROUP}/${PROVIDER_VERSION}`;
/** Where a provider without spec.order sits: after config entries of chains up to 99 steps. */
export const DEFAULT_PROVIDER_ORDER = 1000;

export interface Condition {
  type: 'Ready' | 'Discovered' | 'CircuitOpen' | 'Deprecated' | 'Deleting';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/**
 * `status.references`: how much the provider is referenced through `admissiongateway.io/extensions`.
 * `namespaces` is the status writer's (every replica computes it alike); the other three are added to by
 * every replica with a conditional write (served-counter.ts), and the status writer never sends them.
 */
export interface ProviderReferences {
  /** How many namespaces reference the provider. */
  namespaces?: number;
  /** Objects it served, as an opt-in extension, since `windowStart`. */
  objects?: number;
  /** Start of the current hour's window (RFC 3339). */
  windowStart?: string;
  /** Objects it served in the window before. */
  previousWindowObjects?: number;
}

export interface AdmissionProviderStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  handlers?: Array<{ name: string; phase: string; path: string; admissionReviewVersion?: string }>;
  lastError?: string;
  breaker?: string;
  references?: ProviderReferences;
}

/** One entry of `metadata.managedFields`, as much of it as the gateway reads. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  fieldsV1?: object;
}

export interface AdmissionProvider {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    generation?: number;
    resourceVersion?: string;
    uid?: string;
    annotations?: Record<string, string>;
    finalizers?: string[];
    managedFields?: ManagedFieldsEntry[];
  };
  spec?: unknown;
  status?: AdmissionProviderStatus;
}

/**
 * The keys of the fields `manager` owns through server-side apply below `path` of its managedFields
 * (`['f:spec']`: `f:url`, `f:caBundle`, …; `['f:metadata', 'f:finalizers']`: `v:"<item>"`), across its `Apply`
 * entries. Read from a resource as stored, which no one but the apiserver writes managedFields of.
 */
export function fieldsAppliedBy(resource: unknown, manager: string, path: readonly string[]): string[] {
  const entries = (resource as { metadata?: { managedFields?: unknown } } | undefined)?.metadata?.managedFields;
  if (!Array.isArray(entries)) return [];
  return (entries as ManagedFieldsEntry[])
    .filter((entry) => entry.manager === manager && entry.operation === 'Apply')
    .flatMap((entry) => {
      let fields: unknown = entry.fieldsV1;
      for (const key of path) fields = (fields as Record<string, unknown> | undefined)?.[key];
      return typeof fields === 'object' && fields !== null ? Object.keys(fields) : [];
    });
}

/**
 * Whether deletion of the resource was asked for (`metadata.deletionTimestamp`: a string in a custom
 * object, which client-node's metadata type declares a Date; only its presence matters here).
 */
export function deletionRequested(resource: AdmissionProvider): boolean {
  const timestamp: unknown = (resource.metadata as Record<string, unknown>).deletionTimestamp;
  return timestamp !== undefined && timestamp !== null;
}

export type ProviderResolution =
  | { readonly entry: ProviderEntry; readonly error?: undefined }
  | { readonly entry?: undefined; readonly error: { readonly reason: string; readonly message: string } };

const SPEC_FIELDS = [
  'url',
  'service',
  'caBundle',
  'phases',
  'match',
  'order',
  'clientCert',
  'circuitBreaker',
  'settings',
  'discovery',
  'discoveryPath',
  'admissionReviewVersions',
  'authorizeMatch',
  ...STEP_FIELDS,
];

/**
 * Validates `resource.spec`. Errors name the field (`spec.timeoutSeconds: expected an integer from 1 to 30`)
 * and never throw: an invalid resource is reported in its status, not allowed to break the chain.
 */
export function resolveProvider(resource: AdmissionProvider, reservedNames: ReadonlySet<string>): ProviderResolution {
  const name = resource.metadata.name ?? '';
  if (!isDnsLabel(name)) {
    return {
      error: {
        reason: 'InvalidName',
        message: `metadata.name "${name}" must be a DNS-1123 label of at most ${MAX_DNS_LABEL_CHARS} characters`,
      },
    };
  }
  if (reservedNames.has(name)) {
    return {
      error: {
        reason: 'NameConflict',
        message: `a step named "${name}" is already defined in the gateway's configuration`,
      },
    };
  }
  const r: Reader = new Reader(`AdmissionProvider "${name}"`);
  try {
    const m = r.map(resource.spec, 'spec', SPEC_FIELDS, false);
    const order = r.integer(m.order, 'spec.order', -1_000_000, 1_000_000) ?? DEFAULT_PROVIDER_ORDER;
    const match = readMatch(r, m.match, 'spec.match');
    const settings = r.stringMap(m.settings, 'spec.settings');
    const fields = readProviderFields(r, m, 'spec');
    if (fields.caBundle) {
      const pem = Buffer.from(fields.caBundle, 'base64').toString('utf8');
      if (!pem.includes('-----BEGIN CERTIFICATE-----')) r.fail('spec.caBundle', 'expected base64 of PEM certificates');
    }
    const entry: ProviderEntry = {
      kind: 'provider',
      provider: name,
      name,
      order,
      path: 'spec',
      ...fields,
      ...(match ? { match } : {}),
      ...readStepFields(r, m, 'spec', { timeout: 'whole seconds', phases: fields.phases }),
      ...(settings ? { settings } : {}),
    };
    return { entry };
  } catch (err) {
    const message = err instanceof ConfigError ? `${err.path}: ${err.expected}` : errorMessage(err);
    return { error: { reason: 'InvalidSpec', message } };
  }
}
