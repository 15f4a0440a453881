/**
 * `shadow: true` on a chain entry or an AdmissionProvider (README "Shadow steps"): its steps run beside the live
 * chain after each answer and never change it. Read alike for gateway.yaml entries and AdmissionProvider specs.
 */
import { childPath, type Reader } from './reader.js';

export const SHADOW_FIELDS = ['shadow'] as const;

/** `{ shadow: true }` when `m` says so, else nothing; refused where a shadow step cannot run. */
export function readShadow(
  r: Reader,
  m: Record<string, unknown>,
  path: string,
  phases: readonly string[] = [],
): { readonly shadow?: true } {
  if (r.boolean(m.shadow, childPath(path, 'shadow')) !== true) return {};
  // A shadow step runs after the answer, when the review's references are no longer at hand.
  if (m.attach === 'OptIn' || m.conflictGroup !== undefined) {
    r.fail(childPath(path, 'shadow'), 'cannot be set with attach: OptIn or conflictGroup');
  }
  if (phases.includes('authorize')) {
    r.fail(
      childPath(path, 'shadow'),
      'cannot be set on a provider with the authorize phase (the authorize chain has no shadow)',
    );
  }
  return { shadow: true };
}
