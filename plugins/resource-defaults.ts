/**
 * Gives containers the requests and limits they do not declare, so the scheduler can place them and a
 * runaway container cannot take a node's memory. It never adds a value that would make the container
 * invalid or change what the user meant:
 * - no default request where the user set a limit: Kubernetes then defaults the request to that limit;
 * - no default limit below the request the user set.
 */
import { SettingsError, definePlugin, settingsObject } from '../server/plugin-api/index.js';
import { forEachContainer, isObject, ownField, type Container, type JsonObject, podSpecMatch } from './lib/pod-spec.js';
import { parseQuantity, quantityValue } from './lib/quantity.js';

export interface Quantity {
  /** As configured, inserted verbatim. */
  readonly text: string;
  readonly value: number;
}

export interface ResourceDefaultsSettings {
  readonly requests: ReadonlyMap<string, Quantity>;
  readonly limits: ReadonlyMap<string, Quantity>;
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

function readQuantities(settings: Record<string, unknown>, field: Field): ReadonlyMap<string, Quantity> {
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

const NONE: JsonObject = Object.freeze({});

/** `resources[field]`: empty when absent, undefined when it is not a map (left for the apiserver to refuse). */
function quantitiesIn(resources: JsonObject, field: Field): JsonObject | undefined {
  const value = resources[field];
  if (value === undefined || value === null) return NONE;
  return isObject(value) ? value : undefined;
}

// Plain loops over the settings' keys, returning a map only when something is missing: this runs for every
// container of every created workload, and a Pod may have tens of thousands.
function missingRequests(
  defaults: ReadonlyMap<string, Quantity>,
  requests: JsonObject,
  limits: JsonObject,
): JsonObject | undefined {
  let missing: JsonObject | undefined;
  for (const resource of defaults.keys()) {
    if (ownField(requests, resource) === undefined && ownField(limits, resource) === undefined) {
      (missing ??= {})[resource] = defaults.get(resource)!.text;
    }
  }
  return missing;
}

function missingLimits(
  defaults: ReadonlyMap<string, Quantity>,
  requests: JsonObject,
  limits: JsonObject,
): JsonObject | undefined {
  let missing: JsonObject | undefined;
  for (const resource of defaults.keys()) {
    if (ownField(limits, resource) !== undefined) continue;
    const limit = defaults.get(resource)!;
    const request = ownField(requests, resource);
    if (request !== undefined) {
      // An unreadable request cannot be compared; adding a limit could only make it worse.
      const value = quantityValue(request);
      if (value === undefined || value > limit.value) continue;
    }
    (missing ??= {})[resource] = limit.text;
  }
  return missing;
}

function addQuantities(resources: JsonObject, field: Field, additions: JsonObject | undefined): void {
  if (!additions) return;
  const existing = resources[field];
  if (!isObject(existing)) {
    resources[field] = additions;
    return;
  }
  for (const resource in additions) existing[resource] = additions[resource];
}

function defaultContainer(container: Container, settings: ResourceDefaultsSettings): void {
  const resources = container.resources ?? NONE;
  if (!isObject(resources)) return;
  const requests = quantitiesIn(resources, 'requests');
  const limits = quantitiesIn(resources, 'limits');
  if (!requests || !limits) return;
  // Both lists are decided on the container as the user wrote it, before either is added.
  const newRequests = missingRequests(settings.requests, requests, limits);
  const newLimits = missingLimits(settings.limits, requests, limits);
  if (!newRequests && !newLimits) return;
  const target = resources === NONE ? {} : resources;
  addQuantities(target, 'requests', newRequests);
  addQuantities(target, 'limits', newLimits);
  if (target !== resources) container.resources = target;
}

const DEFAULTED_FIELDS = ['containers', 'initContainers'] as const;

export default definePlugin({
  name: 'resource-defaults',
  description: 'Adds default resource requests and limits to containers that do not declare them',
  match: podSpecMatch(['CREATE']),
  settings: parseSettings,
  mutate({ object, settings }) {
    forEachContainer(object, DEFAULTED_FIELDS, (container) => defaultContainer(container, settings));
  },
});
