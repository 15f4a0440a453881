/**
 * The one internal unit the dispatchers run. Plugins and remote providers both adapt to `Step`, so the
 * mutate and validate dispatchers never branch on where a step came from.
 */
import type { Decision } from '../admission/decision.js';
import type { AdmissionRequest, KubeObject, Match, Phase } from '../admission/types.js';
import type { Logger } from '../base/log.js';
import type { StepFailedError } from '../base/errors.js';
import type { FailurePolicy, Mode, ReinvocationPolicy, SideEffects } from '../config/step-options.js';
import type { MatchCondition } from '../config/match-conditions.js';
import type { Attach } from '../config/types.js';
import type { CompiledMatch } from './match.js';
import type { Declarations } from './declarations.js';

/** What one invocation of a step receives. */
export interface StepInvocation {
  readonly request: AdmissionRequest;
  /** mutate: the tracked working copy; validate: a read-only view. Undefined when the request has none. */
  readonly object: KubeObject | undefined;
  readonly oldObject: KubeObject | undefined;
  /** The current object without a tracking view, for steps that serialise it (providers). */
  readonly plainObject: KubeObject | undefined;
  /** Aborts when the step's time is up. */
  readonly signal: AbortSignal;
  /** Milliseconds granted to this invocation (a provider forwards it as `?timeout=`). */
  readonly timeoutMs: number;
  readonly log: Logger;
  readonly warn: (message: string) => void;
  readonly annotate: (key: string, value: string) => void;
  /**
   * When tracing is on, the W3C trace context of this invocation's span as header name/value pairs, for a
   * step that calls out (a provider sends them, and its span becomes a child of the step's).
   */
  readonly traceHeaders?: readonly string[] | undefined;
}

/** Live state a step reports in `/chain` (e.g. a provider's breaker). */
export type StepStatus = Readonly<Record<string, unknown>>;

export interface Step {
  readonly name: string;
  readonly source: 'plugin' | 'provider' | 'policy';
  readonly phase: Phase;
  readonly match: CompiledMatch;
  readonly failurePolicy: FailurePolicy;
  readonly timeoutMs: number;
  readonly mode: Mode;
  readonly sideEffects: SideEffects;
  readonly reinvocationPolicy: ReinvocationPolicy;
  /** Position in the resolved chain (config entries: 10 × position). */
  readonly order: number;
  /**
   * The chain entry the step belongs to, as `admissiongateway.io/extensions` names it: the entry's name (a
   * plugin entry's `name`, a provider's), also for a discovered handler `<handler>.<provider>`.
   */
  readonly extension: string;
  /** The entry's `attach`: an `OptIn` step runs only for reviews that reference its extension. */
  readonly attach: Attach;
  /** The entry's conflict group: one object may reference one entry of a group only. */
  readonly conflictGroup?: string | undefined;
  /** Whether the step needs a request object to run at all (in-process mutators edit the object). */
  readonly needsObject: boolean;
  /**
   * What a mutating step declared it writes and reads (step-graph.ts): it may then share a level with other
   * declared steps, and a write outside its `supplies` fails it. Undefined: a barrier, as webhooks are.
   */
  readonly declarations?: Declarations;
  /**
   * A decision; its `patch` (mutate phase only) is applied to the working copy by the dispatcher. A step whose
   * failure is known before any work (a provider behind an open breaker) returns it rather than throwing it:
   * a throw costs more than the rest of such a step, on the path of every review it fails.
   */
  invoke(invocation: StepInvocation): Decision | StepFailedError | Promise<Decision>;
  /** Describes the step for `/chain`. */
  describe(): StepStatus;
  /** The match as written: the decision trace says which rule or selector excluded a request. */
  readonly matchSpec?: Match;
  /** A provider's circuit breaker state, for the decision trace. */
  breakerState?(): string;
  /** Runs beside the live chain after the answer, never changing it (shadow.ts). */
  readonly shadow?: boolean;
  /**
   * The step's denials, warnings and audit annotation keys are passed on as it writes them, without its name in
   * front: a native admission policy's, which read as the apiserver writes them (server/native-policy/).
   */
  readonly ownWords?: boolean;
  /** CEL conditions that must all be true for the step to run, else it is skipped (dispatch/match-conditions.ts). */
  readonly matchConditions?: readonly MatchCondition[];
  /** One of its own expressions (its matchConditions aside) reads `namespaceObject`. */
  readonly readsNamespaceObject?: boolean;
}

/** Whether running `step` needs the namespace object: its expressions or its conditions read it. */
export function readsNamespaceObject(step: Step): boolean {
  return (
    step.readsNamespaceObject === true || (step.matchConditions?.some((c) => c.program.readsNamespaceObject) ?? false)
  );
}
