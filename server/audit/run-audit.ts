/**
 * One audit run: the chain's validating steps (or one of them), the resources their rules select (targets.ts),
 * each object listed page by page and reviewed through the gateway's own reviewer, as the CREATE of it would be
 * reviewed now, with bounded concurrency. Bounded throughout: objects per resource and in all, and a deadline;
 * a bound that stopped the audit is said in `cutShort`. Objects are not kept: only what each step said of them.
 *
 * The requests are dry runs (nothing is written; a step declaring side effects is not run, and says `skip`)
 * made by the user `admission-gateway:audit`. Objects in the namespaces the rendered webhook configurations never
 * send to the gateway (kube-system, kube-node-lease, the gateway's own, those labelled admissiongateway.io/exclude)
 * are not audited, only counted: no step would ever see them.
 */
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import type { AdmissionRequest, KubeObject, Match, UserInfo } from '../admission/types.js';
import { requestForObject } from '../admission/request-for-object.js';
import type { BindableLogger } from '../base/log.js';
import { createChain, type Chain } from '../chain/chain.js';
import { effectiveFailurePolicy } from '../steps/policy.js';
import { createReviewer, type NamespaceLabelSource, type Reviewer } from '../dispatch/reviewer.js';
import type { Step } from '../steps/step.js';
import type { AuditConfig } from '../config/types.js';
import { uncounted, type ExceptionSource } from '../exceptions/exception-source.js';
import { selectionOf } from '../http/routes.js';
import { ALWAYS_EXCLUDED, EXCLUDE_LABEL } from '../manifests/render.js';
import type { Metrics } from '../metrics/metrics.js';
import { apiErrorMessage, type AuditCluster } from './cluster.js';
import { stepMessages, stepResults } from './outcomes.js';
import type { AuditedObject, AuditedStep } from './summary.js';
import {
  apiVersionOf,
  auditTargets,
  groupVersionsToRead,
  type AuditTarget,
  type DiscoveredResource,
  type StepRules,
} from './targets.js';

/** Who the audit's reviews are made by. */
export const AUDIT_USER: Readonly<UserInfo> = Object.freeze({
  username: 'admission-gateway:audit',
  groups: ['system:authenticated'],
});

/** Objects asked for in one list call. */
export const PAGE_SIZE = 250;

/** Something the run was asked to do that cannot be done (an unknown --step). */
export class AuditSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditSetupError';
  }
}

export interface AuditDeps {
  readonly cluster: AuditCluster;
  /** The chain whose validating steps are audited. */
  readonly chain: Chain;
  readonly namespaceLabels: NamespaceLabelSource;
  /** For the reviews: the audit's own, so that its reviews are not counted as the gateway's. */
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  readonly limits: AuditConfig;
  readonly deadlineMarginMs: number;
  readonly defaultTimeoutMs: number;
  /** The gateway's namespace (server.service.namespace): excluded, as the rendered webhooks exclude it. */
  readonly gatewayNamespace: string;
  /** Only this step. */
  readonly step?: string | undefined;
  /** The exceptions in force (README "Exceptions"): a step one lets an object off is its `skip`. */
  readonly exceptions?: ExceptionSource | undefined;
  /** Stops the run early (shutdown). */
  readonly signal?: AbortSignal;
  readonly now?: () => Date;
}

export interface AuditRun {
  readonly startedAt: Date;
  readonly steps: readonly AuditedStep[];
  readonly targets: readonly AuditTarget[];
  readonly objects: readonly AuditedObject[];
  /** Objects not audited because the webhooks exclude their namespace. */
  readonly excluded: number;
  /** Why the run did not audit everything its steps select (a bound, the deadline). Empty when complete. */
  readonly cutShort: readonly string[];
  /** What could not be read (a resource the gateway may not list, a step without written rules). */
  readonly problems: readonly string[];
}

function isMatch(value: unknown): value is Match {
  return typeof value === 'object' && value !== null && Array.isArray((value as { rules?: unknown }).rules);
}

/** The validating steps to audit. */
/**
 * The validating steps an audit runs: the live ones and the shadow ones, which are candidates for enforcement
 * (a shadow native policy's bindings act as if bound with Deny), run here as live steps.
 */
export function stepsToAudit(chain: Chain, only: string | undefined): readonly Step[] {
  const shadow = chain.shadowOf('validate').map(({ shadow: _shadow, ...step }): Step => step);
  const steps = [...chain.stepsOf('validate'), ...shadow];
  if (only === undefined) return steps;
  const found = steps.filter((s) => s.name === only);
  if (found.length === 0) {
    const names = steps.map((s) => s.name);
    throw new AuditSetupError(
      `--step: no validating step named "${only}" (${names.length > 0 ? `steps: ${names.join(', ')}` : 'the chain has none'})`,
    );
  }
  return found;
}

/** The request the apiserver would send for creating `object` now, as the audit reviews it. */
export function auditRequest(object: KubeObject, target: AuditTarget): AdmissionRequest {
  const gvr = { group: target.group, version: target.version, resource: target.resource };
  const request = requestForObject(
    { ...object, apiVersion: apiVersionOf(target), kind: target.kind },
    { userInfo: AUDIT_USER, dryRun: true },
  );
  return { ...request, resource: gvr, requestResource: { ...gvr } };
}

function refOf(object: KubeObject, target: AuditTarget): AuditedObject['ref'] {
  const meta = object.metadata ?? {};
  return {
    apiVersion: apiVersionOf(target),
    kind: target.kind,
    name: typeof meta.name === 'string' ? meta.name : '',
    ...(target.namespaced && typeof meta.namespace === 'string' ? { namespace: meta.namespace } : {}),
    ...(typeof meta.uid === 'string' ? { uid: meta.uid } : {}),
  };
}

/** The namespace whose exclusion applies to an object: its own, or a Namespace's itself. */
function namespaceOf(object: KubeObject, target: AuditTarget): string | undefined {
  const meta = object.metadata ?? {};
  if (target.namespaced) return typeof meta.namespace === 'string' ? meta.namespace : undefined;
  return target.group === '' && target.resource === 'namespaces' && typeof meta.name === 'string'
    ? meta.name
    : undefined;
}

/** Whether the rendered webhook configurations' namespaceSelector keeps `object` from the gateway. */
async function isExcluded(
  object: KubeObject,
  target: AuditTarget,
  excludedNames: ReadonlySet<string>,
  labels: NamespaceLabelSource,
): Promise<boolean> {
  const namespace = namespaceOf(object, target);
  if (namespace === undefined) return false;
  if (excludedNames.has(namespace)) return true;
  const found = target.namespaced ? await labels.labels(namespace) : object.metadata?.labels;
  return found != null && Object.hasOwn(found, EXCLUDE_LABEL);
}

/** Runs `work` over `items`, at most `concurrency` at once, yielding to other work between items. */
async function eachBounded<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
      // Reviews in cluster mode share the event loop with the webhook's: let theirs in between.
      await yieldToOthers();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** The audit's reads of discovery: the groups, then each group-version some rule takes. */
async function discover(
  cluster: AuditCluster,
  rules: readonly StepRules[],
  signal: AbortSignal,
  problems: string[],
): Promise<AuditTarget[]> {
  const groups = await cluster.groups(signal);
  const read = new Map<string, readonly DiscoveredResource[]>();
  for (const { group, version } of groupVersionsToRead(rules, groups)) {
    try {
      read.set(`${group}/${version}`, await cluster.resources(group, version, signal));
    } catch (err) {
      if (signal.aborted) throw err;
      problems.push(`cannot read the resources of ${apiVersionOf({ group, version })}: ${apiErrorMessage(err)}`);
    }
  }
  return auditTargets(rules, groups, (group, version) => read.get(`${group}/${version}`));
}

export async function runAudit(deps: AuditDeps): Promise<AuditRun> {
  const now = deps.now ?? (() => new Date());
  const startedAt = now();
  const { limits, cluster } = deps;
  const deadline = AbortSignal.timeout(limits.timeoutSeconds * 1000);
  const signal = deps.signal ? AbortSignal.any([deadline, deps.signal]) : deadline;
  const selected = stepsToAudit(deps.chain, deps.step);
  const problems: string[] = [];
  const cutShort: string[] = [];
  const rules: StepRules[] = [];
  for (const step of selected) {
    const match = step.describe().match;
    if (isMatch(match)) rules.push({ step: step.name, rules: match.rules });
    else problems.push(`step "${step.name}" does not describe its rules: its resources are not listed`);
  }
  const steps: AuditedStep[] = selected.map((s) => ({
    name: s.name,
    mode: s.mode,
    failurePolicy: effectiveFailurePolicy(s),
  }));
  const objects: AuditedObject[] = [];
  const stopped = (): string =>
    deadline.aborted ? `audit.timeoutSeconds (${limits.timeoutSeconds} s) reached` : 'the gateway is stopping';

  let targets: AuditTarget[] = [];
  try {
    targets = await discover(cluster, rules, signal, problems);
  } catch (err) {
    if (!signal.aborted) throw err;
    cutShort.push(`${stopped()} during discovery`);
  }
  const auditChain = createChain(selected);
  const reviewer: Reviewer = createReviewer({
    chain: () => auditChain,
    metrics: deps.metrics,
    log: deps.log,
    namespaceLabels: deps.namespaceLabels,
    deadlineMarginMs: deps.deadlineMarginMs,
    defaultTimeoutMs: deps.defaultTimeoutMs,
    // The audit's reviews are no requests: what they are let off is not counted as admission's use.
    ...(deps.exceptions ? { exceptions: uncounted(deps.exceptions) } : {}),
    // Traced reviews: the trace has each step's own message (a warn step's denial is otherwise a warning).
    onReviewed: () => undefined,
  });
  const order = new Map(selected.map((step, i) => [step.name, i]));
  const excludedNames = new Set<string>([...ALWAYS_EXCLUDED, deps.gatewayNamespace]);
  let excluded = 0;
  /** What the steps said of one object; undefined for one the webhooks exclude. */
  const review = async (object: KubeObject, target: AuditTarget): Promise<AuditedObject | undefined> => {
    if (await isExcluded(object, target, excludedNames, deps.namespaceLabels)) {
      excluded++;
      return undefined;
    }
    const result = await reviewer.review(auditRequest(object, target), selectionOf('validate'));
    // In chain order: the review reports skipped steps before those it ran.
    const results = stepResults(result.reports, stepMessages(result.reviewed?.trace)).sort(
      (a, b) => (order.get(a.step) ?? 0) - (order.get(b.step) ?? 0),
    );
    return { ref: refOf(object, target), results };
  };
  /** The objects of one page, reviewed a few at a time, kept in the order they were listed. */
  const reviewPage = async (items: readonly KubeObject[], target: AuditTarget) => {
    const audited: (AuditedObject | undefined)[] = new Array<AuditedObject | undefined>(items.length);
    await eachBounded(
      items.map((item, i) => ({ item, i })),
      limits.concurrency,
      async ({ item, i }) => {
        audited[i] = await review(item, target);
      },
    );
    for (const object of audited) if (object) objects.push(object);
  };
  /** Objects listed in this run, excluded ones too: what audit.maxObjects bounds. */
  let listedInAll = 0;

  let halted = cutShort.length > 0;
  for (const target of targets) {
    if (halted) break;
    const what = `${target.resource}${target.group ? `.${target.group}` : ''}`;
    if (listedInAll >= limits.maxObjects) {
      cutShort.push(`audit.maxObjects (${limits.maxObjects}) reached before ${what}`);
      break;
    }
    let listed = 0;
    let token: string | undefined;
    try {
      do {
        const left = Math.min(limits.maxObjectsPerResource - listed, limits.maxObjects - listedInAll);
        const page = await cluster.listPage(target, Math.min(PAGE_SIZE, left), token, signal);
        // The apiserver may answer more than the limit asked (a resource without paging support).
        const items = page.items.slice(0, left);
        const more = page.continue !== undefined || page.items.length > items.length;
        listed += items.length;
        listedInAll += items.length;
        await reviewPage(items, target);
        token = page.continue;
        if (signal.aborted) {
          cutShort.push(`${stopped()} while auditing ${what}`);
          halted = true;
        } else if (more && listedInAll >= limits.maxObjects) {
          cutShort.push(`audit.maxObjects (${limits.maxObjects}) reached at ${what}`);
          halted = true;
        } else if (more && listed >= limits.maxObjectsPerResource) {
          cutShort.push(`${what}: only the first ${listed} audited (audit.maxObjectsPerResource)`);
          token = undefined;
        }
      } while (token && !halted);
    } catch (err) {
      if (!signal.aborted) problems.push(`cannot list ${what}: ${apiErrorMessage(err)}`);
      else {
        cutShort.push(`${stopped()} while auditing ${what}`);
        halted = true;
      }
    }
  }
  return { startedAt, steps, targets, objects, excluded, cutShort, problems };
}
