/**
 * Gives containers the requests and limits they do not declare, so the scheduler can place them and a
 * runaway container cannot take a node's memory. It never adds a value that would make the container
 * invalid or change what the user meant:
 * - no default request where the user set a limit: Kubernetes then defaults the request to that limit;
 * - no default limit below the request the user set.
 */
import { SettingsError, definePlugin, settingsObject } from '../server/plugin-api/index.js';
import { containersIn, isObject, ownField, type Container, type JsonObject, podSpecMatch } from './lib/pod-spec.js';
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

/** `resources[field]`: `{}` when absent, undefined when it is not a map (left for the apiserver to refuse). */
function quantitiesIn(resources: JsonObject, field: Field): JsonObject | undefined {
  const value = resources[field];
  if (value === undefined || value === null) return {};
  return isObject(value) ? value : undefined;
}

// Loops rather than spread-and-filter: this runs for every container of every created workload.
function missingRequests(
  defaults: ReadonlyMap<string, Quantity>,
  requests: JsonObject,
  limits: JsonObject,
): Array<[string, Quantity]> {
  const missing: Array<[string, Quantity]> = [];
  for (const entry of defaults) {
    if (ownField(requests, entry[0]) === undefined && ownField(limits, entry[0]) === undefined) missing.push(entry);
  }
  return missing;
}

function missingLimits(
  defaults: ReadonlyMap<string, Quantity>,
  requests: JsonObject,
  limits: JsonObject,
): Array<[string, Quantity]> {
  const missing: Array<[string, Quantity]> = [];
  for (const entry of defaults) {
    const [resource, limit] = entry;
    if (ownField(limits, resource) !== undefined) continue;
    const request = ownField(requests, resource);
    if (request !== undefined) {
      // An unreadable request cannot be compared; adding a limit could only make it worse.
      const value = quantityValue(request);
      if (value === undefined || value > limit.value) continue;
    }
    missing.push(entry);
  }
  return missing;
}

function addQuantities(resources: JsonObject, field: Field, additions: ReadonlyArray<[string, Quantity]>): void {
  if (additions.length === 0) return;
  const existing = resources[field];
  const target: JsonObject = isObject(existing) ? existing : {};
  for (const [resource, quantity] of additions) target[resource] = quantity.text;
  if (target !== existing) resources[field] = target;
}

function defaultContainer(container: Container, settings: ResourceDefaultsSettings): void {
  const resources = container.resources ?? {};
  if (!isObject(resources)) return;
  const requests = quantitiesIn(resources, 'requests');
  const limits = quantitiesIn(resources, 'limits');
  if (!requests || !limits) return;
  // Both lists are decided on the container as the user wrote it, before either is added.
  const newRequests = missingRequests(settings.requests, requests, limits);
  const newLimits = missingLimits(settings.limits, requests, limits);
  if (newRequests.length === 0 && newLimits.length === 0) return;
  addQuantities(resources, 'requests', newRequests);
  addQuantities(resources, 'limits', newLimits);
  container.resources = resources;
}

export default definePlugin({
  name: 'resource-defaults',
  description: 'Adds default resource requests and limits to containers that do not declare them',
  match: podSpecMatch(['CREATE']),
  settings: parseSettings,
  mutate({ object, settings }) {
    for (const { container } of containersIn(object, ['containers', 'initContainers'])) {
      defaultContainer(container, settings);
    }
  },
});
