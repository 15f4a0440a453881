/**
 * What a provider says about itself in its AdmissionProvider, and nothing else. The SDK owns where the
 * provider is (`url` or `service`), the CA it is trusted with (`caBundle`), that it is discovered
 * (`discovery: true`: its handlers and their matches come from GET /discovery) and the phases it has handlers
 * in (`phases`: until discovery succeeds, the gateway runs a failing step for each listed phase). Everything
 * else — `order`, `failurePolicy`, `timeoutSeconds`, `mode`, `match`, `circuitBreaker`, `settings` — is the
 * operator's: the SDK applies it at most once, as defaults when it creates the registration.
 */
import type { Phase } from '../admission/types.js';
import {
  PROVIDER_API_VERSION,
  fieldsAppliedBy,
  resolveProvider,
  type AdmissionProvider,
} from '../kube/admission-provider.js';

/** The Service the provider runs behind, in the cluster the gateway runs in; its handlers are at the root. */
export interface ServiceReference {
  readonly namespace: string;
  readonly name: string;
  /** Default 443. */
  readonly port?: number;
}

/** Where the provider is: exactly one of `url` (`https://HOST[:PORT]`, no path) and `service`. */
export interface ProviderLocation {
  readonly url?: string;
  readonly service?: ServiceReference;
}

/** Operator fields the SDK sets once, when it creates the registration; afterwards they are the operator's. */
export interface RegistrationDefaults {
  readonly order?: number;
  readonly failurePolicy?: 'Fail' | 'Ignore';
  readonly timeoutSeconds?: number;
  readonly mode?: 'enforce' | 'warn' | 'audit';
  readonly circuitBreaker?: {
    readonly errorThresholdPercentage?: number;
    readonly volumeThreshold?: number;
    readonly resetTimeoutSeconds?: number;
    readonly rollingWindowSeconds?: number;
  };
}

/** The spec fields RegistrationDefaults may set: what the SDK hands over to the operator's side. */
export const DEFAULT_FIELDS: readonly (keyof RegistrationDefaults)[] = [
  'order',
  'failurePolicy',
  'timeoutSeconds',
  'mode',
  'circuitBreaker',
];

/** A cluster-scoped object the registration is deleted with (metadata.ownerReferences). */
export interface RegistrationOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** The object a server-side apply sends: only the fields its field manager owns. */
export interface AppliedProvider {
  readonly apiVersion: string;
  readonly kind: 'AdmissionProvider';
  readonly metadata: { readonly name: string; readonly ownerReferences?: readonly RegistrationOwner[] };
  readonly spec: Readonly<Record<string, unknown>>;
}

/** A registration that cannot be made as asked (the message names the option); thrown at start. */
export class RegistrationOptionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistrationOptionsError';
  }
}

function locationSpec(location: ProviderLocation): Record<string, unknown> {
  if ((location.url === undefined) === (location.service === undefined)) {
    throw new RegistrationOptionsError('register: expected exactly one of url and service');
  }
  if (location.service) {
    const { namespace, name, port = 443 } = location.service;
    return { service: { namespace, name, port } };
  }
  let url: URL;
  try {
    url = new URL(location.url!);
  } catch {
    throw new RegistrationOptionsError(
      `register.url: expected https://HOST[:PORT], got ${JSON.stringify(location.url)}`,
    );
  }
  // The SDK serves its handlers and /discovery at the root: a path would send the gateway elsewhere.
  if (url.pathname !== '/' || url.search || url.hash || url.username || url.password) {
    throw new RegistrationOptionsError(
      `register.url: expected https://HOST[:PORT] without a path (the SDK serves at the root), got ${JSON.stringify(location.url)}`,
    );
  }
  return { url: `${url.protocol}//${url.host}` };
}

/**
 * The registration the SDK applies: `name`, the location, the CA (PEM) as caBundle, `discovery: true`, the
 * handlers' phases and the owner. Checked with the rules the gateway applies to AdmissionProviders, so a
 * mistake fails at start naming the field instead of in the provider's status.
 */
export function ownedRegistration(
  name: string,
  location: ProviderLocation,
  ca: string | Buffer | undefined,
  phases: readonly Phase[],
  owner?: RegistrationOwner,
): AppliedProvider {
  if (phases.length === 0) throw new RegistrationOptionsError('register: the provider serves no handler');
  const object: AppliedProvider = {
    apiVersion: PROVIDER_API_VERSION,
    kind: 'AdmissionProvider',
    metadata: { name, ...(owner ? { ownerReferences: [owner] } : {}) },
    spec: {
      ...locationSpec(location),
      ...(ca !== undefined ? { caBundle: Buffer.from(ca).toString('base64') } : {}),
      discovery: true,
      phases: [...new Set(phases)],
    },
  };
  check(object);
  return object;
}

/** `object` with the defaults' fields in its spec; checked like the registration. */
export function withDefaults(object: AppliedProvider, defaults: RegistrationDefaults): AppliedProvider {
  const known = new Set<string>(DEFAULT_FIELDS);
  const unknown = Object.keys(defaults).filter((key) => !known.has(key));
  if (unknown.length > 0) {
    throw new RegistrationOptionsError(
      `register.defaults: unknown field ${unknown[0]} (expected ${DEFAULT_FIELDS.join(', ')})`,
    );
  }
  const result = { ...object, spec: { ...object.spec, ...defaults } };
  check(result);
  return result;
}

function check(object: AppliedProvider): void {
  const resolved = resolveProvider(object, new Set());
  if (resolved.error) throw new RegistrationOptionsError(`register: ${resolved.error.message}`);
}

/** The spec fields of `object` as they are stored, picked by name. */
export function specFields(object: AdmissionProvider, fields: readonly string[]): Record<string, unknown> {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  return Object.fromEntries(fields.filter((f) => spec[f] !== undefined).map((f) => [f, spec[f]]));
}

/** The top-level spec fields `manager` owns through server-side apply (its `f:spec` entries in managedFields). */
export function specFieldsAppliedBy(object: unknown, manager: string): string[] {
  return fieldsAppliedBy(object, manager, ['f:spec'])
    .filter((key) => key.startsWith('f:'))
    .map((key) => key.slice(2));
}
