/**
 * The step fields every chain entry (plugin, provider, policy) and an AdmissionProvider's spec take: one list of
 * keys, one reader, one type. A new step field is its key and its reading here, what the step holds and what
 * `/chain` shows of it in steps/placement.ts, and its behaviour where it acts.
 */
import { ATTACH_FIELDS, readAttachment, type Attachment } from './attachment.js';
import { readMatchConditions, type MatchCondition } from './match-conditions.js';
import { childPath, type Reader } from './reader.js';
import { SHADOW_FIELDS, readShadow } from './shadow.js';
import { DECLARATION_FIELDS, readStepDeclarations, type StepDeclarations } from './step-declarations.js';
import { STEP_OPTION_FIELDS, readStepOptions, type StepOptions } from './step-options.js';

/** The keys of the step fields. */
export const STEP_FIELDS = [
  ...STEP_OPTION_FIELDS,
  ...SHADOW_FIELDS,
  ...DECLARATION_FIELDS,
  ...ATTACH_FIELDS,
  'matchConditions',
] as const;

/** The step fields as written; each absent one is left to the next source (step-options.ts) or its default. */
export interface StepFields extends StepOptions, StepDeclarations, Attachment {
  /**
   * The entry's steps run beside the live chain after the answer, and never change it; their disagreements are
   * counted (README "Shadow steps").
   */
  readonly shadow?: true;
  /** CEL conditions that must all be true for the steps to run (README "Match conditions"). */
  readonly matchConditions?: readonly MatchCondition[];
}

export interface StepFieldsContext {
  /** An AdmissionProvider's spec takes whole seconds, as its schema says. */
  readonly timeout?: 'seconds' | 'whole seconds';
  /** A provider's phases (some fields are refused with `authorize`). */
  readonly phases?: readonly string[];
}

/** The step fields of the map `m` at `path`; only those present are returned. */
export function readStepFields(
  r: Reader,
  m: Record<string, unknown>,
  path: string,
  context: StepFieldsContext = {},
): StepFields {
  const matchConditions = readMatchConditions(r, m.matchConditions, childPath(path, 'matchConditions'));
  return {
    ...readStepOptions(r, m, path, context.timeout),
    ...readStepDeclarations(r, m, path),
    ...readAttachment(r, m, path),
    ...readShadow(r, m, path, context.phases),
    ...(matchConditions ? { matchConditions } : {}),
  };
}
