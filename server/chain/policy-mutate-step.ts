/**
 * The mutate step of a `policy` chain entry with `mutations` (README "Policies in CEL"): its changes are the
 * JSON Patch operations server/policy/mutations.ts gives, which the mutate phase applies as any step's patch.
 * In `warn` or `audit` mode the step changes nothing: what it would have changed becomes a warning or the audit
 * annotation `<step>.would-patch`, as a denial in those modes becomes one.
 */
import { APPROVED, type Decision } from '../admission/decision.js';
import type { JsonPatchOperation } from '../admission/types.js';
import { StepFailedError } from '../base/errors.js';
import { clip } from '../base/limits.js';
import type { PolicyEntry } from '../config/types.js';
import { runMutations } from '../policy/mutations.js';
import { declarationFields } from '../steps/declarations.js';
import type { Step } from '../steps/step.js';
import { policyStepBase } from './policy-step-base.js';

/** Operations a would-patch note names at most. */
const NAMED_OPERATIONS = 5;

/** What a patch would have done, in a line: `add /metadata/labels/team, replace /spec/replicas`. */
function summary(patch: readonly JsonPatchOperation[]): string {
  const named = patch.slice(0, NAMED_OPERATIONS).map((op) => `${op.op} ${clip(op.path)}`);
  const more = patch.length > NAMED_OPERATIONS ? ` and ${patch.length - NAMED_OPERATIONS} more` : '';
  return `${named.join(', ')}${more}`;
}

/** The mutate step of a policy entry that has `mutations`. */
export function createPolicyMutateStep(entry: PolicyEntry): Step {
  const { spec } = entry;
  const base = policyStepBase(entry, 'mutate');
  const { mode } = base.fields;
  const { declarations, declared } = declarationFields(entry);
  return {
    ...base.fields,
    ...(declarations ? { declarations } : {}),
    // Nothing to mutate on a DELETE or CONNECT: the step is skipped, as a mutating plugin is.
    needsObject: true,
    invoke(inv): Decision {
      const patch = runMutations(spec, inv);
      if (patch instanceof StepFailedError) throw patch;
      if (patch.length === 0) return APPROVED;
      if (mode === 'enforce') return { allowed: true, patch };
      if (mode === 'warn') inv.warn(`would patch ${summary(patch)} (mode warn: not applied)`);
      else inv.annotate('would-patch', summary(patch));
      return APPROVED;
    },
    describe: () => base.describe({ mutations: (spec.mutations ?? []).map((m) => m.patchType), ...(declared ?? {}) }),
  };
}
