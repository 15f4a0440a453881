/**
 * Where a chain entry's step stands and how it is guarded, from the entry's step fields (config/entry-fields.ts):
 * built in one place for plugin, provider and policy steps alike, copied onto each Step by one function and shown
 * in `/chain` by another, so that a new step field is written once on each side.
 */
import type { Match, Phase } from '../admission/types.js';
import type { StepFields } from '../config/entry-fields.js';
import type { StepDeclarations } from '../config/step-declarations.js';
import { resolveStepOptions, type StepOptions } from '../config/step-options.js';
import type { Attach, EntryCommon } from '../config/types.js';
import { declarationFields } from './declarations.js';
import { compileMatch } from './match.js';
import type { Step } from './step.js';

/** How a chain entry is placed and guarded: what plugin, provider and policy steps share. */
export type StepPlacement = Pick<
  Step,
  | 'name'
  | 'match'
  | 'failurePolicy'
  | 'timeoutMs'
  | 'mode'
  | 'sideEffects'
  | 'reinvocationPolicy'
  | 'order'
  | 'declarations'
  | 'extension'
  | 'attach'
  | 'conflictGroup'
  | 'shadow'
  | 'matchConditions'
> & {
  /** The match as written, for /chain. */
  readonly matchSpec: Match;
  /** The declarations as written, for /chain. */
  readonly declared?: StepDeclarations;
};

/** What a step takes from elsewhere than its entry. */
export interface PlacementOf {
  /** The match: the entry's, or what stands for it (a plugin's own, a provider's default). */
  readonly match: Match;
  /** Options below the entry's: a plugin's defaults. */
  readonly defaults?: StepOptions | undefined;
  /** A discovered handler: its name, and its options and declarations above the entry's. */
  readonly handler?: (StepOptions & StepDeclarations & { readonly name: string }) | undefined;
}

/** The step placement of `entry`'s steps. */
export function placeEntry(
  entry: Pick<EntryCommon, 'name' | 'order' | keyof StepFields>,
  of: PlacementOf,
): StepPlacement {
  const { timeoutSeconds, ...options } = resolveStepOptions(of.handler, entry, of.defaults);
  return {
    name: of.handler ? `${of.handler.name}.${entry.name}` : entry.name,
    match: compileMatch(of.match),
    matchSpec: of.match,
    ...options,
    timeoutMs: timeoutSeconds * 1000,
    order: entry.order,
    // A discovered handler belongs to its provider's extension: the entry's attach and conflict group are its.
    extension: entry.name,
    attach: entry.attach ?? 'Always',
    conflictGroup: entry.conflictGroup,
    ...(entry.shadow ? { shadow: true } : {}),
    ...(entry.matchConditions ? { matchConditions: entry.matchConditions } : {}),
    ...declarationFields(of.handler ?? entry),
  };
}

/** The fields a Step of `phase` takes from its placement. */
export function placedFields(p: StepPlacement, phase: Phase): StepPlacement {
  const mutating = phase === 'mutate';
  return {
    name: p.name,
    match: p.match,
    matchSpec: p.matchSpec,
    failurePolicy: p.failurePolicy,
    timeoutMs: p.timeoutMs,
    mode: p.mode,
    sideEffects: p.sideEffects,
    // Reinvocation and declared writes are the mutate phase's.
    reinvocationPolicy: mutating ? p.reinvocationPolicy : 'Never',
    order: p.order,
    extension: p.extension,
    attach: p.attach,
    conflictGroup: p.conflictGroup,
    ...(p.shadow ? { shadow: true } : {}),
    ...(p.matchConditions ? { matchConditions: p.matchConditions } : {}),
    ...(mutating && p.declarations ? { declarations: p.declarations } : {}),
  };
}

/** `/chain`'s attachment fields of a step: only those that differ from the default. */
function describeAttachment(p: Pick<StepPlacement, 'attach' | 'conflictGroup'>): {
  attach?: Attach;
  conflictGroup?: string;
} {
  return {
    ...(p.attach === 'OptIn' ? { attach: p.attach } : {}),
    ...(p.conflictGroup !== undefined ? { conflictGroup: p.conflictGroup } : {}),
  };
}

/** What `/chain` shows of a step's placement, after its name, source, phase and order. */
export function describePlacement(p: StepPlacement, phase: Phase): Record<string, unknown> {
  const mutating = phase === 'mutate';
  return {
    mode: p.mode,
    failurePolicy: p.failurePolicy,
    timeoutSeconds: p.timeoutMs / 1000,
    sideEffects: p.sideEffects,
    reinvocationPolicy: mutating ? p.reinvocationPolicy : 'Never',
    match: p.matchSpec,
    ...(p.matchConditions
      ? { matchConditions: p.matchConditions.map((c) => ({ name: c.name, expression: c.program.expression })) }
      : {}),
    ...(mutating && p.declared ? p.declared : {}),
    ...describeAttachment(p),
    ...(p.shadow ? { shadow: true } : {}),
  };
}
