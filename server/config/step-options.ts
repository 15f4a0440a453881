/**
 * How a step is guarded: what a chain entry, an AdmissionProvider, a discovered handler or a plugin's defaults
 * may say about it (a webhook registration's failurePolicy, timeoutSeconds, sideEffects and
 * reinvocationPolicy, plus the gateway's own mode), the values each takes, and what each is when nobody says.
 * The one place these defaults and bounds are written; docs/configuration.md states them for operators.
 */
import { MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS } from '../base/step-rules.js';
import { childPath, type Reader } from './reader.js';

/** What a failure of the step does (a returned denial is not a failure): refuse the review, or go on. */
export type FailurePolicy = 'Fail' | 'Ignore';
/** What a denial of the step does: deny, warn, or only annotate. */
export type Mode = 'enforce' | 'warn' | 'audit';
export type ReinvocationPolicy = 'Never' | 'IfNeeded';
/** `Some`: the step is skipped on dry-run requests. */
export type SideEffects = 'None' | 'Some';

export const FAILURE_POLICIES: readonly FailurePolicy[] = ['Fail', 'Ignore'];
export const MODES: readonly Mode[] = ['enforce', 'warn', 'audit'];
export const REINVOCATION_POLICIES: readonly ReinvocationPolicy[] = ['Never', 'IfNeeded'];
export const SIDE_EFFECTS: readonly SideEffects[] = ['None', 'Some'];

/** The keys readStepOptions reads. */
export const STEP_OPTION_FIELDS = [
  'failurePolicy',
  'timeoutSeconds',
  'mode',
  'sideEffects',
  'reinvocationPolicy',
] as const;

export { MIN_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS };

/** What a step gets when neither its entry nor its plugin says otherwise: a webhook registration's defaults. */
export const STEP_DEFAULTS = {
  failurePolicy: 'Fail',
  timeoutSeconds: 10,
  mode: 'enforce',
  sideEffects: 'None',
  reinvocationPolicy: 'Never',
} as const satisfies Required<StepOptions>;

/** The options as written: each absent one falls back to the next source, then to STEP_DEFAULTS. */
export interface StepOptions {
  readonly failurePolicy?: FailurePolicy;
  readonly timeoutSeconds?: number;
  readonly mode?: Mode;
  readonly sideEffects?: SideEffects;
  readonly reinvocationPolicy?: ReinvocationPolicy;
}

/** Each option from the first source that sets it, else its default. */
export function resolveStepOptions(...sources: readonly (StepOptions | undefined)[]): Required<StepOptions> {
  const first = <K extends keyof StepOptions>(key: K): StepOptions[K] =>
    sources.find((source) => source?.[key] !== undefined)?.[key];
  return {
    failurePolicy: first('failurePolicy') ?? STEP_DEFAULTS.failurePolicy,
    timeoutSeconds: first('timeoutSeconds') ?? STEP_DEFAULTS.timeoutSeconds,
    mode: first('mode') ?? STEP_DEFAULTS.mode,
    sideEffects: first('sideEffects') ?? STEP_DEFAULTS.sideEffects,
    reinvocationPolicy: first('reinvocationPolicy') ?? STEP_DEFAULTS.reinvocationPolicy,
  };
}

/**
 * Reads the step options of a map (a chain entry, or an AdmissionProvider's spec, whose timeoutSeconds is a
 * whole number as its schema says); only those present are returned.
 */
export function readStepOptions(
  r: Reader,
  m: Record<string, unknown>,
  path: string,
  timeout: 'seconds' | 'whole seconds' = 'seconds',
): StepOptions {
  const failurePolicy = r.oneOf(m.failurePolicy, childPath(path, 'failurePolicy'), FAILURE_POLICIES);
  const timeoutSeconds = readTimeoutSeconds(r, m.timeoutSeconds, childPath(path, 'timeoutSeconds'), timeout);
  const mode = r.oneOf(m.mode, childPath(path, 'mode'), MODES);
  const sideEffects = r.oneOf(m.sideEffects, childPath(path, 'sideEffects'), SIDE_EFFECTS);
  const reinvocationPolicy = r.oneOf(
    m.reinvocationPolicy,
    childPath(path, 'reinvocationPolicy'),
    REINVOCATION_POLICIES,
  );
  return {
    ...(failurePolicy ? { failurePolicy } : {}),
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    ...(mode ? { mode } : {}),
    ...(sideEffects ? { sideEffects } : {}),
    ...(reinvocationPolicy ? { reinvocationPolicy } : {}),
  };
}

export function readTimeoutSeconds(
  r: Reader,
  value: unknown,
  path: string,
  timeout: 'seconds' | 'whole seconds' = 'seconds',
): number | undefined {
  return timeout === 'seconds'
    ? r.number(value, path, MIN_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS)
    : r.integer(value, path, 1, MAX_TIMEOUT_SECONDS);
}
