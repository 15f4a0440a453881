/**
 * A decision on an admission request, the one shape for what a step returns, what a phase comes to and what
 * the review answers: allowed, with the JSON patch a mutating step or phase makes, or denied with a message
 * and the HTTP code the client sees.
 */
import type { JsonPatchOperation } from './types.js';

export type Decision = Approval | Denial;

export interface Approval {
  readonly allowed: true;
  readonly patch?: readonly JsonPatchOperation[];
}

export interface Denial {
  readonly allowed: false;
  readonly message: string;
  readonly code: number;
  /** Never a patch: present so that `decision.patch` reads without asking which one it is. */
  readonly patch?: undefined;
}

/** Allowed without a patch: one object for every such decision. */
export const APPROVED: Approval = Object.freeze({ allowed: true });
