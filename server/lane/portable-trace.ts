/**
 * A kept trace input (explain/kept-trace.ts) as it crosses from a worker of the large-review lane to the main
 * thread: plain data, each step named instead of referenced. The main thread finds the steps by name in its own
 * chain, built from the same configuration, and keeps the input as it keeps a main-lane review's.
 */
import type { Chain } from '../chain/chain.js';
import type { KeptInput } from '../explain/kept-trace.js';
import type { Step } from '../steps/step.js';
import type { TraceInput } from '../trace/decision-trace.js';
import type { ShadowStepTrace, StepDetail } from '../trace/step-report.js';

export type PortableDetail = Omit<StepDetail, 'step'> & { readonly step: string };

export interface PortableKept {
  readonly input: Omit<TraceInput, 'details'> & { readonly details: readonly PortableDetail[] };
  readonly bytes: number;
  readonly clipped: boolean;
}

/** The kept input with its steps named; its shadow entries so far copied (the rest follow one by one). */
export function portableKept(kept: KeptInput): PortableKept {
  const { input } = kept;
  return {
    input: {
      ...input,
      details: input.details.map((detail) => ({ ...detail, step: detail.step.name })),
      shadow: input.shadow ? [...input.shadow] : undefined,
    },
    bytes: kept.bytes,
    clipped: kept.clipped,
  };
}

/**
 * The kept input again, its steps those of `chain` with the same names; undefined when the chain no longer has
 * one of them (it changed since). `shadow` is the array later shadow entries are to be added to.
 */
export function restoredKept(
  portable: PortableKept,
  chain: Chain,
): { kept: KeptInput; shadow: ShadowStepTrace[] | undefined } | undefined {
  const { input } = portable;
  const named = new Map<string, Step>();
  // A plugin's mutate and validate steps share a name: the review's phase's are looked in.
  for (const step of [...chain.stepsOf(input.phase), ...chain.shadowOf(input.phase)]) named.set(step.name, step);
  const details: StepDetail[] = [];
  for (const detail of input.details) {
    const step = named.get(detail.step);
    if (!step) return undefined;
    details.push({ ...detail, step });
  }
  const shadow = input.shadow ? [...input.shadow] : undefined;
  return { kept: { input: { ...input, details, shadow }, bytes: portable.bytes, clipped: portable.clipped }, shadow };
}
