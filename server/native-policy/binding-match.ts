/**
 * Which requests a binding of a native policy (validating or mutating) sees: its policy's matchConstraints and
 * its own matchResources together, compiled, and as `/chain` and the decision trace show them.
 */
import type { LabelSelector, Match } from '../admission/types.js';
import type { CompiledMatch } from '../steps/match.js';
import { compileMatchResources } from './match-resources.js';
import type { NativeBinding, NativePolicy } from './native-objects.js';

/** Both selectors' requirements: a label both name with different values goes to matchExpressions as In. */
function bothSelectors(a: LabelSelector, b: LabelSelector | undefined): LabelSelector | undefined {
  const matchLabels: Record<string, string> = { ...a.matchLabels };
  const matchExpressions = [...(a.matchExpressions ?? []), ...(b?.matchExpressions ?? [])];
  for (const [key, value] of Object.entries(b?.matchLabels ?? {})) {
    if (matchLabels[key] === undefined || matchLabels[key] === value) matchLabels[key] = value;
    else matchExpressions.push({ key, operator: 'In', values: [value] });
  }
  const some = Object.keys(matchLabels).length > 0;
  if (!some && matchExpressions.length === 0) return undefined;
  return { ...(some ? { matchLabels } : {}), ...(matchExpressions.length > 0 ? { matchExpressions } : {}) };
}

/**
 * The policy's rules, and the selectors of the policy and the binding together (a request must pass both), as
 * `/chain` shows them and a decision trace names the requirement a skipped request failed.
 */
export function matchSpecOf(
  policy: Pick<NativePolicy, 'matchConstraints'>,
  binding: Pick<NativeBinding, 'matchResources'>,
): Match {
  const namespaceSelector = bothSelectors(
    policy.matchConstraints.namespaceSelector,
    binding.matchResources?.namespaceSelector,
  );
  const objectSelector = bothSelectors(policy.matchConstraints.objectSelector, binding.matchResources?.objectSelector);
  return {
    rules: policy.matchConstraints.resourceRules.map(({ resourceNames: _names, ...rule }) => rule),
    ...(namespaceSelector ? { namespaceSelector } : {}),
    ...(objectSelector ? { objectSelector } : {}),
  };
}

/** The policy's matchConstraints and the binding's matchResources: a request must pass both. */
export function compiledMatch(
  policy: Pick<NativePolicy, 'matchConstraints'>,
  binding: Pick<NativeBinding, 'matchResources'>,
): CompiledMatch {
  const byPolicy = compileMatchResources(policy.matchConstraints);
  const byBinding = binding.matchResources ? compileMatchResources(binding.matchResources) : undefined;
  const { ruleIndex } = byPolicy;
  return {
    matches: (request, labels) => byPolicy.matches(request, labels) ?? byBinding?.matches(request, labels),
    rulesMatch: (request) => ruleIndex(request) >= 0,
    needsNamespaceLabels: byPolicy.needsNamespaceLabels || (byBinding?.needsNamespaceLabels ?? false),
    ruleIndex,
  };
}
