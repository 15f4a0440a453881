/**
 * Optional provider discovery, in the spirit of Cluster API's Discovery hook: `GET <url>/discovery`
 * returns `{ handlers: [{ name, phase, match, timeoutSeconds, failurePolicy, path? }] }`; each handler
 * becomes a step named `<handler>.<provider>`, POSTed at `<url>/<handler>` unless it gives a `path`.
 */
import { DECLARATION_FIELDS, readStepDeclarations, type StepDeclarations } from '../config/step-declarations.js';
import { readMatch } from '../config/match-schema.js';
import { Reader, childPath } from '../config/reader.js';
import { MAX_DNS_LABEL_CHARS, isDnsLabel } from '../config/names.js';
import { FAILURE_POLICIES, readTimeoutSeconds, type FailurePolicy } from '../config/step-options.js';
import type { Match } from '../admission/types.js';
import { readReviewVersions } from '../config/review-versions.js';
import {
  DISCOVERY_KIND,
  HOOK_API_V1ALPHA1,
  HOOK_API_VERSIONS,
  type HookApiVersion,
  type ReviewVersion,
} from '../protocol/versions.js';

export interface DiscoveredHandler extends StepDeclarations {
  readonly name: string;
  readonly phase: 'mutate' | 'validate';
  readonly match?: Match;
  readonly timeoutSeconds?: number;
  readonly failurePolicy?: FailurePolicy;
  /** Absolute path on the provider's host. */
  readonly path: string;
  /** The hook API version it implements. */
  readonly apiVersion: HookApiVersion;
  /** The AdmissionReview versions it speaks, preferred first; absent = the entry's. */
  readonly admissionReviewVersions?: readonly ReviewVersion[];
}

const HANDLER_FIELDS = [
  'name',
  'phase',
  'apiVersion',
  'admissionReviewVersions',
  'match',
  'timeoutSeconds',
  'failurePolicy',
  'path',
  ...DECLARATION_FIELDS,
];

/** A hook API version at `path`: absent is v1alpha1 (documents from before versions existed). */
function readHookApiVersion(r: Reader, value: unknown, path: string): HookApiVersion {
  const version = r.string(value, path);
  if (version === undefined) return HOOK_API_V1ALPHA1;
  if (!(HOOK_API_VERSIONS as readonly string[]).includes(version)) {
    r.fail(path, `unsupported hook API version (this gateway speaks ${HOOK_API_VERSIONS.join(', ')})`, version);
  }
  return version as HookApiVersion;
}

/** Parses a discovery document; throws ConfigError naming the field (file `discovery of "<provider>"`). */
export function parseDiscovery(doc: unknown, provider: string, basePath: string): DiscoveredHandler[] {
  const r: Reader = new Reader(`discovery of "${provider}"`);
  const m = r.map(doc, '', ['apiVersion', 'kind', 'handlers'], false);
  const documentVersion = readHookApiVersion(r, m.apiVersion, 'apiVersion');
  if (m.kind !== undefined && m.kind !== DISCOVERY_KIND) r.fail('kind', `expected ${DISCOVERY_KIND}`, m.kind);
  const handlers = r.list(m.handlers, 'handlers');
  if (!handlers || handlers.length === 0) r.fail('handlers', 'expected a non-empty list of handlers');
  const seen = new Set<string>();
  return handlers.map((item, i) => {
    const p = `handlers[${i}]`;
    const h = r.map(item, p, HANDLER_FIELDS, false);
    const name = r.requiredString(h.name, childPath(p, 'name'));
    if (!isDnsLabel(name) || `${name}.${provider}`.length > MAX_DNS_LABEL_CHARS) {
      r.fail(
        childPath(p, 'name'),
        `expected a lower-case DNS-1123 label (with the provider name, at most ${MAX_DNS_LABEL_CHARS} characters)`,
        name,
      );
    }
    if (seen.has(name)) r.fail(childPath(p, 'name'), `handler "${name}" is listed twice`);
    seen.add(name);
    const phase = r.oneOf(h.phase, childPath(p, 'phase'), ['mutate', 'validate'] as const);
    if (!phase) r.fail(childPath(p, 'phase'), 'is required (mutate or validate)');
    const match = readMatch(r, h.match, childPath(p, 'match'));
    const timeoutSeconds = readTimeoutSeconds(r, h.timeoutSeconds, childPath(p, 'timeoutSeconds'));
    const failurePolicy = r.oneOf(h.failurePolicy, childPath(p, 'failurePolicy'), FAILURE_POLICIES);
    const path = r.string(h.path, childPath(p, 'path')) ?? `${basePath.replace(/\/+$/, '')}/${name}`;
    if (!path.startsWith('/') || path.includes('?') || path.includes('#')) {
      r.fail(childPath(p, 'path'), 'expected an absolute path without query or fragment', path);
    }
    const apiVersion =
      h.apiVersion === undefined ? documentVersion : readHookApiVersion(r, h.apiVersion, childPath(p, 'apiVersion'));
    const admissionReviewVersions = readReviewVersions(
      r,
      h.admissionReviewVersions,
      childPath(p, 'admissionReviewVersions'),
    );
    return {
      name,
      phase,
      path,
      apiVersion,
      ...(admissionReviewVersions ? { admissionReviewVersions } : {}),
      ...(match ? { match } : {}),
      ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
      ...(failurePolicy ? { failurePolicy } : {}),
      ...readStepDeclarations(r, h, p),
    };
  });
}
