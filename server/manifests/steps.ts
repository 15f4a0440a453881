/**
 * The renderer's view of a resolved chain: per step its phase, policies and the match *as written*.
 * Steps only keep their compiled match; the written one is what `describe()` reports for `/chain`
 * (plugin-step.ts and provider-step.ts both put StepPlacement.matchSpec there), so it is read from there
 * and checked rather than trusted.
 */
import type { Chain } from '../chain/chain.js';
import { effectiveFailurePolicy } from '../steps/policy.js';
import type { Step } from '../steps/step.js';
import type { Match } from '../admission/types.js';
import type { RenderStep } from './render.js';

function isMatch(value: unknown): value is Match {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { rules?: unknown }).rules) &&
    (value as { rules: unknown[] }).rules.length > 0
  );
}

export function renderStepOf(step: Step): RenderStep {
  const match = step.describe().match;
  if (!isMatch(match)) {
    throw new Error(`step "${step.name}" does not describe its match: cannot render its webhook rules`);
  }
  return {
    name: step.name,
    phase: step.phase,
    match,
    failurePolicy: effectiveFailurePolicy(step),
    timeoutMs: step.timeoutMs,
    sideEffects: step.sideEffects,
    reinvocationPolicy: step.reinvocationPolicy,
    ...(step.matchConditions
      ? { matchConditions: step.matchConditions.map((c) => ({ name: c.name, expression: c.program.expression })) }
      : {}),
  };
}

/** Every step of the chain, both phases, in chain order. */
export function renderStepsOf(chain: Chain): RenderStep[] {
  return [...chain.stepsOf('mutate'), ...chain.stepsOf('validate')].map(renderStepOf);
}
