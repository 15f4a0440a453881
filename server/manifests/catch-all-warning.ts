/**
 * The warning `manifests` prints for a webhook that is failurePolicy Fail and matches every resource: while
 * the gateway is unreachable (a bad rollout, a node drain gone wrong, a NetworkPolicy) the apiserver refuses
 * every write it matches — cluster-scoped objects included, since namespaceSelector does not filter them.
 * It names the steps that make the webhook Fail and those that make it match everything, and what to change.
 */
import type { RuleWithOperations } from '../admission/types.js';
import { isRendered, planWebhooks, type RenderStep, type WebhookPlan } from './render.js';

/** Every resource of every API group: `apiGroups: ['*']` with `resources: ['*']` or `['*\/*']`. */
export function coversEveryResource(rule: RuleWithOperations): boolean {
  return rule.apiGroups.includes('*') && rule.resources.some((r) => r === '*' || r === '*/*');
}

const ALL_OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

function describeRule(rule: RuleWithOperations): string {
  const list = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(', ')}]`;
  return `operations ${list(rule.operations)}, apiGroups ${list(rule.apiGroups)}, resources ${list(rule.resources)}`;
}

function warning(plan: WebhookPlan, allResources: boolean): string | undefined {
  const catchAll = plan.steps.flatMap((step) =>
    step.match.rules.filter(coversEveryResource).map((rule) => ({ step, rule })),
  );
  if (plan.failurePolicy !== 'Fail' || (!allResources && catchAll.length === 0)) return undefined;
  const operations = new Set(catchAll.flatMap(({ rule }) => rule.operations));
  const what = allResources || operations.has('*') ? ALL_OPERATIONS : [...operations];
  const clusterScoped = allResources || catchAll.some(({ rule }) => (rule.scope ?? '*') !== 'Namespaced');
  const broad = [
    ...new Set(catchAll.map(({ step, rule }) => `${step.name} (${describeRule(rule)})`)),
    ...(allResources ? ['--all-resources'] : []),
  ];
  const failing = plan.steps.filter((s) => s.failurePolicy === 'Fail').map((s) => s.name);
  return [
    `WARNING: ${plan.name} (${plan.path}) is rendered failurePolicy Fail with rules that match every resource: ` +
      `while the gateway is unreachable, the apiserver refuses every ${what.join('/')} of any resource in the ` +
      `namespaces it selects${clusterScoped ? ', and of any cluster-scoped resource (namespaceSelector does not filter those)' : ''}.`,
    `  failurePolicy Fail because of: ${failing.length > 0 ? failing.join(', ') : 'AdmissionProviders added at run time with failurePolicy Fail (--all-resources renders this route for them)'}`,
    `  every resource because of: ${broad.join('; ')}`,
    '  To avoid it, give those steps failurePolicy: Ignore (or mode: warn), or narrow their match.rules to the ' +
      `resources they need (a provider without match sees every request)${allResources ? ', or render without --all-resources' : ''}.`,
  ].join('\n');
}

/** One warning per webhook of `steps` that is Fail and matches every resource (none when there is none). */
export function catchAllFailWarnings(steps: readonly RenderStep[], allResources: boolean): string[] {
  return planWebhooks(steps)
    .filter((plan) => isRendered(plan, allResources))
    .flatMap((plan) => warning(plan, allResources) ?? []);
}
