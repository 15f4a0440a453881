/**
 * The exceptions in force, indexed by step name and namespace, so that a review looks only at those naming
 * the step it is about to run in the request's own namespace (and the cluster-wide ones): with no exception
 * the cost is one check per review, with some it is a map lookup per step. Built off the request path each
 * time the exceptions change; immutable once built.
 */
import type { AdmissionRequest } from '../admission/types.js';
import type { Labels } from '../steps/label-selector.js';
import { isNamespaceResource } from '../steps/match.js';
import { ANY_STEP, EXCEPTION_GROUP, type GatewayException } from './exception.js';

/** What the exceptions say about one step for one request at one instant. */
export interface ExceptionDecision {
  /** The exception in force that covers the request, if any (an Exempt one before a Warn one). */
  readonly applied?: GatewayException;
  /** Without one in force: an expired exception that would have covered it (a warning names it). */
  readonly expired?: GatewayException;
}

/** Namespace → exceptions; `''` holds the cluster-wide ones. */
type ByNamespace = Map<string, GatewayException[]>;

const CLUSTER = '';

/** Exempt first, then namespaced before cluster-wide, then by name: the same exception wins everywhere. */
function precedence(a: GatewayException, b: GatewayException): number {
  if (a.mode !== b.mode) return a.mode === 'Exempt' ? -1 : 1;
  if ((a.namespace === undefined) !== (b.namespace === undefined)) return a.namespace === undefined ? 1 : -1;
  return a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0;
}

export interface ExceptionIndexOptions {
  /** The only steps exceptions may let off (`exceptions.allowedSteps`); undefined: every step. */
  readonly allowedSteps?: readonly string[] | undefined;
}

export class ExceptionIndex {
  static readonly EMPTY = new ExceptionIndex([]);

  readonly size: number;
  /** Some exception's match has a namespaceSelector: reviews look up the namespace's labels. */
  readonly needsNamespaceLabels: boolean;
  private readonly byStep = new Map<string, ByNamespace>();
  private readonly allowed: ReadonlySet<string> | undefined;

  constructor(exceptions: readonly GatewayException[], options: ExceptionIndexOptions = {}) {
    this.allowed = options.allowedSteps ? new Set(options.allowedSteps) : undefined;
    let needsLabels = false;
    for (const exception of [...exceptions].sort(precedence)) {
      needsLabels ||= exception.needsNamespaceLabels;
      for (const step of exception.steps) {
        let byNamespace = this.byStep.get(step);
        if (!byNamespace) this.byStep.set(step, (byNamespace = new Map<string, GatewayException[]>()));
        const key = exception.namespace ?? CLUSTER;
        const list = byNamespace.get(key);
        if (list) list.push(exception);
        else byNamespace.set(key, [exception]);
      }
    }
    this.size = exceptions.length;
    this.needsNamespaceLabels = needsLabels;
  }

  /** Whether exceptions may let `step` off at all (`exceptions.allowedSteps`). */
  accepts(step: string): boolean {
    return this.allowed === undefined || this.allowed.has(step);
  }

  /**
   * What the exceptions say about `step` for `request` at `now` (ms since the epoch). An AdmissionException
   * covers requests in its own namespace only (not the Namespace object itself, which is cluster-scoped); none covers a request on the gateway's own resources
   * (admissiongateway.io: its providers and exceptions), so an exception can never let itself or another in
   * past the steps that govern them.
   */
  decide(
    step: string,
    request: AdmissionRequest,
    namespaceLabels: Labels | undefined,
    now: number,
  ): ExceptionDecision | undefined {
    if (this.size === 0 || !this.accepts(step)) return undefined;
    const named = this.byStep.get(step);
    const any = this.byStep.get(ANY_STEP);
    if (!named && !any) return undefined;
    if (request.resource.group === EXCEPTION_GROUP) return undefined;
    const namespace = isNamespaceResource(request) ? undefined : request.namespace || undefined;
    let applied: GatewayException | undefined;
    let expired: GatewayException | undefined;
    const visit = (list: readonly GatewayException[] | undefined): void => {
      if (!list) return;
      for (const exception of list) {
        if (applied && precedence(applied, exception) <= 0) return;
        if (!exception.matches(request, namespaceLabels)) continue;
        if (now < exception.expiresAt) applied = exception;
        else if (!expired || exception.expiresAt > expired.expiresAt) expired = exception;
      }
    };
    if (namespace !== undefined) visit(named?.get(namespace));
    visit(named?.get(CLUSTER));
    visit(any?.get(CLUSTER));
    if (applied) return { applied };
    return expired ? { expired } : undefined;
  }
}
