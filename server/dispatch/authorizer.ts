/**
 * The authorize chain (POST /authorize): the steps whose match selects the request are called at once and
 * settled in chain order; the first that forbids decides, with its reason. A failure (a throw, a timeout)
 * forbids under `failurePolicy: Fail` and has no opinion under `Ignore`. Excluded identities (exclusions.ts)
 * and requests no step matches get no opinion at once, without a timer or a namespace lookup: this is on
 * the path of every request to the apiserver.
 */
import { verbOf, type AuthorizationAttributes } from '../authorization/attributes.js';
import {
  NO_OPINION,
  type AuthorizeCall,
  type AuthorizeDecision,
  type AuthorizeStep,
} from '../authorization/authorize-step.js';
import { StepFailedError, errorMessage } from '../base/errors.js';
import { clip } from '../base/limits.js';
import type { BindableLogger } from '../base/log.js';
import type { Metrics } from '../metrics/metrics.js';
import { Invocation, callWithin, type CallRules, type Called } from '../steps/invocation.js';
import { failureMessage } from '../steps/policy.js';
import { outcomeOfFailure } from './review-observer.js';
import type { NamespaceLabelSource } from './reviewer.js';

export interface AuthorizerDeps {
  /** The current chain's authorize steps. */
  readonly steps: () => readonly AuthorizeStep[];
  readonly excluded: (attributes: AuthorizationAttributes) => boolean;
  readonly namespaceLabels: NamespaceLabelSource;
  readonly metrics: Metrics;
  readonly log: BindableLogger;
  readonly now?: () => number;
}

export interface Authorizer {
  /** The chain's decision: the reason of the step that forbids, or no opinion. */
  authorize(attributes: AuthorizationAttributes): AuthorizeDecision | Promise<AuthorizeDecision>;
}

/** How one step's call ended: its decision or its failure, and when. */
interface Settled {
  readonly called: Called<AuthorizeDecision>;
  readonly ms: number;
}

/** What a step is called with (invocation.ts: its AbortController is made only if the step reads its signal). */
class AuthorizeInvocation extends Invocation implements AuthorizeCall {
  constructor(
    readonly attributes: AuthorizationAttributes,
    readonly namespaceLabels: Readonly<Record<string, string>> | undefined,
    timeoutMs: number,
    readonly log: BindableLogger,
  ) {
    super(timeoutMs);
  }
}

/** An authorize step's answer is its decision as its adapter made it; its timeouts are worded for the reason. */
const AUTHORIZE_RULES: CallRules<AuthorizeDecision> = {
  answer: (value) => value as AuthorizeDecision,
  late: (timeoutMs) => `no answer within ${timeoutMs} ms`,
  overran: (ms) => `ran for ${Math.round(ms)} ms`,
};

export function createAuthorizer(deps: AuthorizerDeps): Authorizer {
  const now = deps.now ?? (() => performance.now());
  const { metrics } = deps;

  /** Calls one step within its time (invocation.ts): synchronously when the step answers synchronously. */
  const call = (
    step: AuthorizeStep,
    attributes: AuthorizationAttributes,
    namespaceLabels: Readonly<Record<string, string>> | undefined,
  ): Settled | Promise<Settled> => {
    const started = now();
    const settled = (called: Called<AuthorizeDecision>): Settled => ({ called, ms: now() - started });
    const invocation = new AuthorizeInvocation(attributes, namespaceLabels, step.timeoutMs, deps.log);
    const called = callWithin<AuthorizeInvocation, AuthorizeDecision>(step, invocation, AUTHORIZE_RULES, now);
    return called instanceof Promise ? called.then(settled) : settled(called);
  };

  /** Counts and logs how a call ended: every call, including those settled after the decision. */
  const record = (step: AuthorizeStep, settled: Settled, attributes: AuthorizationAttributes): void => {
    metrics.stepDuration.observe({ step: step.name, phase: 'authorize' }, settled.ms / 1000);
    const { called } = settled;
    if (!(called instanceof StepFailedError)) {
      const outcome = called.denied ? 'denied' : 'no_opinion';
      metrics.stepCalls.inc({ step: step.name, phase: 'authorize', outcome });
      return;
    }
    const outcome = outcomeOfFailure(called.reason);
    metrics.stepCalls.inc({ step: step.name, phase: 'authorize', outcome });
    if (step.failurePolicy === 'Ignore') metrics.failOpen.inc({ step: step.name });
    // An open breaker fails every call at once: a line each would be thousands a second of noise.
    if (called.reason === 'breaker_open') return;
    const fields = { step: step.name, user: attributes.user, reason: called.reason, err: clip(errorMessage(called)) };
    if (step.failurePolicy === 'Ignore') deps.log.warn(fields, 'authorize step failed open');
    else deps.log.warn(fields, 'authorize step failed: request forbidden (failurePolicy Fail)');
  };

  /** The denial a settled call makes, or undefined. */
  const denialOf = (step: AuthorizeStep, { called }: Settled): AuthorizeDecision | undefined => {
    if (called instanceof StepFailedError) {
      if (step.failurePolicy === 'Ignore') return undefined;
      return { denied: true, reason: failureMessage(step, called.reason, clip(errorMessage(called))) };
    }
    if (!called.denied) return undefined;
    return { denied: true, reason: `${step.name}: ${clip(called.reason)}` };
  };

  /** Counts the decision, and logs a denial with the step that made it. */
  const finish = (
    decision: AuthorizeDecision,
    step: AuthorizeStep | undefined,
    attributes: AuthorizationAttributes,
    started: number,
  ) => {
    metrics.authorizeDuration.observe((now() - started) / 1000);
    metrics.authorizeRequests.inc({ decision: decision.denied ? 'denied' : 'no_opinion' });
    if (decision.denied) {
      const r = attributes.resource;
      deps.log.info(
        {
          user: attributes.user,
          verb: verbOf(attributes),
          ...(r
            ? {
                resource: r.subresource ? `${r.resource}/${r.subresource}` : r.resource,
                group: r.group,
                namespace: r.namespace,
                name: r.name,
              }
            : { path: attributes.nonResource!.path }),
          step: step?.name,
          reason: decision.reason,
        },
        'authorize: forbidden',
      );
    }
    return decision;
  };

  /**
   * Starts every matching step, then settles them in chain order, the first denial deciding; synchronously as
   * long as the steps answered synchronously. The steps after the deciding one were called too: their outcomes
   * are counted when they come.
   */
  const decide = (
    matched: readonly AuthorizeStep[],
    attributes: AuthorizationAttributes,
    labels: Readonly<Record<string, string>> | undefined,
    started: number,
  ): AuthorizeDecision | Promise<AuthorizeDecision> => {
    const calls = matched.map((step) => call(step, attributes, labels));
    const settle = (i: number, settled: Settled): AuthorizeDecision | undefined => {
      record(matched[i]!, settled, attributes);
      return denialOf(matched[i]!, settled);
    };
    const countRest = (from: number) => {
      for (let i = from; i < calls.length; i++) {
        const pending = calls[i]!;
        const step = matched[i]!;
        if (pending instanceof Promise) void pending.then((settled) => record(step, settled, attributes));
        else record(step, pending, attributes);
      }
    };
    for (let i = 0; i < calls.length; i++) {
      const settled = calls[i]!;
      if (settled instanceof Promise) {
        return (async () => {
          for (let k = i; k < calls.length; k++) {
            const denial = settle(k, await calls[k]!);
            if (denial) {
              countRest(k + 1);
              return finish(denial, matched[k], attributes, started);
            }
          }
          return finish(NO_OPINION, undefined, attributes, started);
        })();
      }
      const denial = settle(i, settled);
      if (denial) {
        countRest(i + 1);
        return finish(denial, matched[i], attributes, started);
      }
    }
    return finish(NO_OPINION, undefined, attributes, started);
  };

  const run = (
    matched: readonly AuthorizeStep[],
    attributes: AuthorizationAttributes,
  ): AuthorizeDecision | Promise<AuthorizeDecision> => {
    const started = now();
    const namespace = attributes.resource?.namespace;
    const found = namespace ? deps.namespaceLabels.labels(namespace) : undefined;
    return found instanceof Promise
      ? found.then((labels) => decide(matched, attributes, labels, started))
      : decide(matched, attributes, found, started);
  };

  return {
    authorize(attributes) {
      if (deps.excluded(attributes)) {
        metrics.authorizeRequests.inc({ decision: 'excluded' });
        return NO_OPINION;
      }
      const steps = deps.steps();
      let matched: AuthorizeStep[] | undefined;
      for (const step of steps) if (step.match.matches(attributes)) (matched ??= []).push(step);
      if (!matched) {
        metrics.authorizeRequests.inc({ decision: 'no_opinion' });
        return NO_OPINION;
      }
      return run(matched, attributes);
    },
  };
}
