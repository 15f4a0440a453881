/**
 * Renders the Mutating- and ValidatingWebhookConfiguration that route the apiserver to the gateway for a
 * resolved chain (the `manifests` command). Pure: the steps, the target and the caBundle come in, plain
 * objects go out.
 *
 * - One mutating webhook on `/mutate` for the whole mutate phase: splitting it by failure policy would
 *   run the Fail steps and the Ignore steps as two webhooks, i.e. out of chain order.
 * - One validating webhook per failure policy present, on `/validate/fail` and `/validate/ignore`, each
 *   with its own steps' rules: the apiserver's failurePolicy then matches what the steps asked for when
 *   the gateway itself cannot be reached.
 * - A webhook without steps is left out (it would only cost a call).
 */
import type { LabelSelector, LabelSelectorRequirement, Match } from '../admission/types.js';
import {
  MAX_TIMEOUT_SECONDS,
  type FailurePolicy,
  type ReinvocationPolicy,
  type SideEffects,
} from '../config/step-options.js';
import { celList } from './cel-literal.js';
import { SINCE, atLeast, type KubeVersion } from './kube-version.js';
import { unionRules } from './rules.js';
import { stepConditions, type WebhookMatchCondition } from './step-conditions.js';

/** What the renderer needs of one resolved step. */
export interface RenderStep {
  readonly name: string;
  readonly phase: 'mutate' | 'validate';
  /** The match as written (config entry, plugin default, provider entry or discovered handler). */
  readonly match: Match;
  readonly failurePolicy: FailurePolicy;
  readonly timeoutMs: number;
  readonly sideEffects: SideEffects;
  readonly reinvocationPolicy: ReinvocationPolicy;
  /** The step's matchConditions as written (step-conditions.ts). */
  readonly matchConditions?: readonly WebhookMatchCondition[];
}

/** Where the apiserver reaches the gateway. */
export type WebhookTarget =
  | { readonly kind: 'service'; readonly namespace: string; readonly name: string; readonly port: number }
  | { readonly kind: 'url'; readonly url: string };

export interface RenderOptions {
  /** metadata.name of both configurations. */
  readonly name: string;
  readonly target: WebhookTarget;
  /** base64 of the CA certificate(s) that signed the serving certificate; '' leaves it to be patched in. */
  readonly caBundle: string;
  /** The gateway's own namespace: always excluded, so the gateway can start while it is down. */
  readonly gatewayNamespace: string;
  /** More namespaces to exclude (kube-system and kube-node-lease always are). */
  readonly excludeNamespaces?: readonly string[];
  /** Labels a namespace must carry to be selected at all (ANDed with the exclusions). */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  /**
   * A catch-all rule set and every route, instead of the union of the steps': for AdmissionProviders
   * added at run time, which only ever see what the webhook configurations send.
   */
  readonly allResources?: boolean;
  /** server.deadlineMarginMs: added to the largest step timeout. */
  readonly deadlineMarginMs: number;
  /** server.defaultTimeoutSeconds: the timeout of a webhook without steps (`allResources`). */
  readonly defaultTimeoutSeconds: number;
  /** The Kubernetes version rendered for: decides how namespaces and Leases are kept out. */
  readonly kubeVersion: KubeVersion;
}

/** Namespaces the gateway must never intercept: itself, the control plane and node heartbeats (Leases). */
export const ALWAYS_EXCLUDED = ['kube-system', 'kube-node-lease'] as const;
/** A namespace labelled with this (any value) is not sent to the gateway: the operator's opt-out. */
export const EXCLUDE_LABEL = 'admissiongateway.io/exclude';
/** The namespace name label the apiserver sets (1.21+; on older clusters NotIn excludes nothing). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
export const APP_LABEL = { 'app.kubernetes.io/name': 'admission-gateway' } as const;

/** Everything, subresources included: what a provider added at run time may ask for. */
export const CATCH_ALL_RULES = [
  { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: '*' },
] as const satisfies Match['rules'];

export interface WebhookClientConfig {
  readonly service?: {
    readonly namespace: string;
    readonly name: string;
    readonly path: string;
    readonly port: number;
  };
  readonly url?: string;
  /** Absent when rendered without one (`--no-ca-bundle`). */
  readonly caBundle?: string;
}

export type { WebhookMatchCondition };

export interface RenderedWebhook {
  readonly name: string;
  readonly admissionReviewVersions: readonly string[];
  readonly sideEffects: 'None' | 'NoneOnDryRun';
  readonly timeoutSeconds: number;
  readonly failurePolicy: FailurePolicy;
  readonly reinvocationPolicy?: ReinvocationPolicy;
  readonly matchPolicy: 'Equivalent';
  readonly clientConfig: WebhookClientConfig;
  readonly namespaceSelector: LabelSelector;
  readonly rules: Match['rules'];
  /**
   * From Kubernetes 1.30: the excluded namespaces and Leases, by name, without a label anyone must set; and the
   * steps' own conditions when every step behind the webhook has some (step-conditions.ts).
   */
  readonly matchConditions?: readonly WebhookMatchCondition[];
}

export interface RenderedConfiguration {
  readonly apiVersion: 'admissionregistration.k8s.io/v1';
  readonly kind: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration';
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly webhooks: readonly RenderedWebhook[];
}

/** One webhook to render: its route, policy and the steps behind it. */
export interface WebhookPlan {
  readonly name: string;
  readonly path: string;
  readonly failurePolicy: FailurePolicy;
  readonly steps: readonly RenderStep[];
  readonly mutating: boolean;
}

function clientConfig(target: WebhookTarget, path: string, caBundle: string): WebhookClientConfig {
  if (target.kind === 'service') {
    return {
      service: { name: target.name, namespace: target.namespace, path, port: target.port },
      ...(caBundle ? { caBundle } : {}),
    };
  }
  // No caBundle at all rather than '': re-applying the rendered file then keeps the one the gateway patched in.
  return { url: `${target.url.replace(/\/+$/, '')}${path}`, ...(caBundle ? { caBundle } : {}) };
}

/** The namespaces the webhooks never select, in a stable order (the header names them too). */
export function excludedNamespaces(gatewayNamespace: string, extra: readonly string[] = []): string[] {
  return [...new Set([...ALWAYS_EXCLUDED, gatewayNamespace, ...extra])];
}

/**
 * Where the namespaces are excluded by name: in `matchConditions` from 1.30 (so the label selector keeps only
 * the operator's opt-out), through the name label the apiserver sets from 1.21 until then, and not at all
 * before 1.21, where that label does not exist (the header says to label those namespaces instead).
 */
export function namespaceSelector(options: RenderOptions): LabelSelector {
  const byLabel =
    atLeast(options.kubeVersion, SINCE.namespaceNameLabel) &&
    !atLeast(options.kubeVersion, SINCE.webhookMatchConditions);
  const matchExpressions: LabelSelectorRequirement[] = [
    ...(byLabel
      ? [
          {
            key: NAMESPACE_NAME_LABEL,
            operator: 'NotIn' as const,
            values: excludedNamespaces(options.gatewayNamespace, options.excludeNamespaces),
          },
        ]
      : []),
    { key: EXCLUDE_LABEL, operator: 'DoesNotExist' },
  ];
  const labels = options.namespaceLabels ?? {};
  return Object.keys(labels).length > 0 ? { matchLabels: { ...labels }, matchExpressions } : { matchExpressions };
}

/**
 * From 1.30: the excluded namespaces by `request.namespace` (a Namespace's own requests carry its name there,
 * so the Namespace objects are excluded too), and Leases wherever they are — node heartbeats and leader
 * elections, the most frequent writes of a cluster, which no step should ever delay.
 */
export function matchConditions(options: RenderOptions): WebhookMatchCondition[] | undefined {
  if (!atLeast(options.kubeVersion, SINCE.webhookMatchConditions)) return undefined;
  const excluded = excludedNamespaces(options.gatewayNamespace, options.excludeNamespaces);
  return [
    { name: 'exclude-namespaces', expression: `!(request.namespace in ${celList(excluded)})` },
    {
      name: 'exclude-leases',
      expression: "!(request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases')",
    },
  ];
}

/**
 * The largest step timeout plus the gateway's deadline margin, in whole seconds, at most 30: the gateway
 * grants each step min(its timeout, what is left of `?timeout` minus the margin), so the slowest step
 * gets its full time and the answer still arrives before the apiserver gives up. With `allResources` the
 * steps added at run time are unknown: they are counted as server.defaultTimeoutSeconds.
 */
export function webhookTimeoutSeconds(
  steps: readonly { readonly timeoutMs: number }[],
  options: Pick<RenderOptions, 'allResources' | 'defaultTimeoutSeconds' | 'deadlineMarginMs'>,
): number {
  const timeoutsMs = [
    ...steps.map((s) => s.timeoutMs),
    ...(options.allResources || steps.length === 0 ? [options.defaultTimeoutSeconds * 1000] : []),
  ];
  const longest = Math.max(...timeoutsMs);
  return Math.max(1, Math.min(MAX_TIMEOUT_SECONDS, Math.ceil((longest + options.deadlineMarginMs) / 1000)));
}

function renderWebhook(plan: WebhookPlan, options: RenderOptions): RenderedWebhook {
  const rules = options.allResources ? CATCH_ALL_RULES : unionRules(plan.steps.flatMap((s) => s.match.rules));
  const steps = stepConditions(plan, options);
  const exclusions = matchConditions(options);
  const conditions = exclusions && steps?.condition ? [...exclusions, steps.condition] : exclusions;
  return {
    name: plan.name,
    admissionReviewVersions: ['v1', 'v1beta1'],
    // admissionregistration/v1 allows only None and NoneOnDryRun; the gateway skips `sideEffects: Some`
    // steps on dry-run requests, so with such a step it is exactly NoneOnDryRun.
    sideEffects: plan.steps.some((s) => s.sideEffects === 'Some') ? 'NoneOnDryRun' : 'None',
    timeoutSeconds: webhookTimeoutSeconds(plan.steps, options),
    failurePolicy: plan.failurePolicy,
    ...(plan.mutating
      ? { reinvocationPolicy: plan.steps.some((s) => s.reinvocationPolicy === 'IfNeeded') ? 'IfNeeded' : 'Never' }
      : {}),
    matchPolicy: 'Equivalent',
    clientConfig: clientConfig(options.target, plan.path, options.caBundle),
    namespaceSelector: namespaceSelector(options),
    rules: rules.map((rule) => ({ ...rule })),
    ...(conditions ? { matchConditions: conditions } : {}),
  };
}

/** Whether a webhook is rendered: one without steps only costs a call, unless `allResources` asks for every route. */
export function isRendered(plan: WebhookPlan, allResources: boolean | undefined): boolean {
  return allResources === true || plan.steps.length > 0;
}

function configuration(
  kind: RenderedConfiguration['kind'],
  plans: readonly WebhookPlan[],
  options: RenderOptions,
): RenderedConfiguration[] {
  const webhooks = plans.filter((p) => isRendered(p, options.allResources));
  if (webhooks.length === 0) return [];
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name: options.name, labels: { ...APP_LABEL } },
      webhooks: webhooks.map((plan) => renderWebhook(plan, options)),
    },
  ];
}

/**
 * The webhooks a chain needs, mutating first: one for the whole mutate phase, one per validating failure
 * policy. Plans without steps are kept (`allResources` renders them for AdmissionProviders added later).
 */
export function planWebhooks(steps: readonly RenderStep[]): WebhookPlan[] {
  const mutate = steps.filter((s) => s.phase === 'mutate');
  const validate = (policy: FailurePolicy) => steps.filter((s) => s.phase === 'validate' && s.failurePolicy === policy);
  return [
    {
      name: 'mutate.admissiongateway.io',
      path: '/mutate',
      // Fail when any step is Fail: while the gateway is unreachable, a Fail step must not be skipped.
      failurePolicy: mutate.some((s) => s.failurePolicy === 'Fail') ? 'Fail' : 'Ignore',
      steps: mutate,
      mutating: true,
    },
    {
      name: 'validate-fail.admissiongateway.io',
      path: '/validate/fail',
      failurePolicy: 'Fail',
      steps: validate('Fail'),
      mutating: false,
    },
    {
      name: 'validate-ignore.admissiongateway.io',
      path: '/validate/ignore',
      failurePolicy: 'Ignore',
      steps: validate('Ignore'),
      mutating: false,
    },
  ];
}

/** The configurations for `steps` (mutating first); one without webhooks is left out. */
export function renderWebhookConfigurations(
  steps: readonly RenderStep[],
  options: RenderOptions,
): RenderedConfiguration[] {
  const plans = planWebhooks(steps);
  return [
    ...configuration(
      'MutatingWebhookConfiguration',
      plans.filter((p) => p.mutating),
      options,
    ),
    ...configuration(
      'ValidatingWebhookConfiguration',
      plans.filter((p) => !p.mutating),
      options,
    ),
  ];
}

/** Why the steps' matchConditions are not rendered into some webhook, one line each (the command prints them). */
export function stepConditionNotes(steps: readonly RenderStep[], options: RenderOptions): string[] {
  return planWebhooks(steps)
    .filter((plan) => isRendered(plan, options.allResources))
    .flatMap((plan) => stepConditions(plan, options)?.why ?? []);
}
