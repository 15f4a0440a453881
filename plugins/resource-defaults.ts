/**
 * Gives containers the requests and limits they do not declare, so the scheduler can place them and a
 * runaway container cannot take a node's memory. It never adds a value that would make the container
 * invalid or change what the user meant:
 * - no default request where the user set a limit: Kubernetes then defaults the request to that limit;
 * - no default limit below the request the user set.
 */
import {
  SettingsError,
  definePlugin,
  isObject,
  own,
  podSpecResources,
  settingsObject,
} from '../server/plugin-api/index.js';
import { forEachContainer, type AnyContainer } from './lib/pod-spec.js';
import { parseQuantity } from './lib/quantity.js';

export interface Quantity {
  /** As configured, inserted verbatim. */
  readonly text: string;
  readonly value: number;
}

/** Resource name → default quantity. */
type Defaults = ReadonlyMap<string, Quantity>;

export interface ResourceDefaultsSettings {
  readonly requests: Defaults;
  readonly limits: Defaults;
}

type Field = 'requests' | 'limits';

const FALLBACK: Readonly<Record<Field, Readonly<Record<string, string>>>> = {
  requests: { cpu: '100m', memory: '128Mi' },
  limits: { memory: '512Mi' },
};

/** YAML reads `cpu: 1` as a number; the apiserver accepts numbers for quantities too. */
function readQuantity(value: unknown, path: string): Quantity {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value : undefined;
  const parsed = text === undefined ? undefined : parseQuantity(text);
  if (text === undefined || parsed === undefined || parsed < 0) {
    throw new SettingsError(path, `expected a quantity such as 100m, 0.5 or 128Mi, got ${JSON.stringify(value)}`);
  }
  return { text, value: parsed };
}

function readQuantities(settings: Record<string, unknown>, field: Field): Defaults {
  const raw = settings[field] === undefined ? FALLBACK[field] : settings[field];
  if (!isObject(raw)) {
    throw new SettingsError(
      field,
      `expected a map of resource names to quantities, e.g. { cpu: 100m, memory: 128Mi }, got ${JSON.stringify(raw)}`,
    );
  }
  return new Map(
    Object.entries(raw).map(([resource, value]) => [resource, readQuantity(value, `${field}.${resource}`)]),
  );
}

function parseSettings(raw: unknown): ResourceDefaultsSettings {
  const settings = settingsObject(raw, ['requests', 'limits']);
  const requests = readQuantities(settings, 'requests');
  const limits = readQuantities(settings, 'limits');
  if (requests.size === 0 && limits.size === 0) {
    throw new SettingsError('', 'expected requests or limits (or both) with at least one entry');
  }
  for (const [resource, request] of requests) {
    const limit = limits.get(resource);
    if (limit && request.value > limit.value) {
      throw new SettingsError(
        `requests.${resource}`,
        `the default request ${request.text} is larger than the default limit ${limit.text}`,
      );
    }
  }
  return { requests, limits };
}

type Resources = NonNullable<AnyContainer['resources']>;
/** A container's requests or limits: resource name → quantity. */
type Quantities = Record<string, string>;

const NONE: Quantities = Object.freeze({});

// Plain loops over the settings' keys, returning a map only when something is missing: this runs for every
// container of every created workload, and a Pod may have tens of thousands.
function missingRequests(defaults: Defaults, requests: Quantities, limits: Quantities): Quantities | undefined {
  let missing: Quantities | undefined;
  for (const resource of defaults.keys()) {
    if (own(requests, resource) === undefined && own(limits, resource) === undefined) {
      (missing ??= {})[resource] = defaults.get(resource)!.text;
    }
  }
  return missing;
}

function missingLimits(defaults: Defaults, requests: Quantities, limits: Quantities): Quantities | undefined {
  let missing: Quantities | undefined;
  for (const resource of defaults.keys()) {
    if (own(limits, resource) !== undefined) continue;
    const limit = defaults.get(resource)!;
    const request = own(requests, resource);
    if (request !== undefined) {
      // An unreadable request cannot be compared; adding a limit could only make it worse.
      const value = parseQuantity(request);
      if (value === undefined || value > limit.value) continue;
    }
    (missing ??= {})[resource] = limit.text;
  }
  return missing;
}

function addQuantities(resources: Resources, field: Field, additions: Quantities | undefined): void {
  if (!additions) return;
  const existing = resources[field];
  if (existing) Object.assign(existing, additions);
  else resources[field] = additions;
}

function defaultContainer(container: AnyContainer, defaults: ResourceDefaultsSettings): void {
  const existing = container.resources;
  const requests = existing?.requests ?? NONE;
  const limits = existing?.limits ?? NONE;
  // Both lists are decided on the container as the user wrote it, before either is added.
  const newRequests = missingRequests(defaults.requests, requests, limits);
  const newLimits = missingLimits(defaults.limits, requests, limits);
  if (!newRequests && !newLimits) return;
  // A new resources map is filled before it is written, so the container gets one write.
  const resources = existing ?? {};
  addQuantities(resources, 'requests', newRequests);
  addQuantities(resources, 'limits', newLimits);
  if (!existing) container.resources = resources;
}

const DEFAULTED_FIELDS = ['containers', 'initContainers'] as const;

export default definePlugin({
  name: 'resource-defaults',
  description: 'Adds default resource requests and limits to containers that do not declare them',
  match: podSpecResources().create(),
  settings: parseSettings,
  setup: (defaults) => ({
    mutate: ({ object }) => forEachContainer(object, DEFAULTED_FIELDS, (c) => defaultContainer(c, defaults)),
  }),
});
