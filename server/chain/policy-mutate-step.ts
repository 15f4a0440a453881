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
import { resolveStepOptions } from '../config/step-options.js';
import type { PolicyEntry } from '../config/types.js';
import { attachmentOf, describeAttachment } from '../extensions/chain-extensions.js';
import { runMutations } from '../policy/mutations.js';
import { declarationFields } from '../steps/declarations.js';
import { compileMatch } from '../steps/match.js';
import type { Step } from '../steps/step.js';

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
  const { timeoutSeconds, ...options } = resolveStepOptions(entry);
  const matchSpec = entry.match!;
  const { spec } = entry;
  const attachment = attachmentOf(entry);
  const { declarations, declared } = declarationFields(entry);
  return {
    name: entry.name,
    source: 'policy',
    phase: 'mutate',
    match: compileMatch(matchSpec),
    matchSpec,
    failurePolicy: options.failurePolicy,
    timeoutMs: timeoutSeconds * 1000,
    mode: options.mode,
    sideEffects: 'None',
    reinvocationPolicy: options.reinvocationPolicy,
    order: entry.order,
    ...attachment,
    ...(declarations ? { declarations } : {}),
    // Nothing to mutate on a DELETE or CONNECT: the step is skipped, as a mutating plugin is.
    needsObject: true,
    ...(entry.shadow ? { shadow: true } : {}),
    invoke(inv): Decision {
      const patch = runMutations(spec, inv);
      if (patch instanceof StepFailedError) throw patch;
      if (patch.length === 0) return APPROVED;
      if (options.mode === 'enforce') return { allowed: true, patch };
      if (options.mode === 'warn') inv.warn(`would patch ${summary(patch)} (mode warn: not applied)`);
      else inv.annotate('would-patch', summary(patch));
      return APPROVED;
    },
    describe: () => ({
      name: entry.name,
      source: 'policy',
      policy: entry.policy,
      phase: 'mutate',
      order: entry.order,
      mode: options.mode,
      failurePolicy: options.failurePolicy,
      timeoutSeconds,
      sideEffects: 'None',
      reinvocationPolicy: options.reinvocationPolicy,
      match: matchSpec,
      ...(spec.matchConditions.length > 0
        ? { matchConditions: spec.matchConditions.map((c) => ({ name: c.name, expression: c.program.expression })) }
        : {}),
      mutations: (spec.mutations ?? []).map((m) => m.patchType),
      ...(declared ?? {}),
      ...describeAttachment(attachment),
      ...(entry.shadow ? { shadow: true } : {}),
    }),
  };
}
