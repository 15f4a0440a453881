/**
 * The AuthorizationConfiguration (apiserver.config.k8s.io/v1) kube-apiserver reads with `--authorization-config`
 * from Kubernetes 1.32 on, in place of `--authorization-mode` and the `--authorization-webhook-*` flags: the
 * authorizers in order, with the gateway's webhook where `withWebhook` puts it, `failurePolicy: NoOpinion` (a
 * gateway that cannot be reached forbids nothing and locks nobody out, as with the flags), and CEL match
 * conditions that keep every request the gateway would not judge off it. Pure: command.ts writes it.
 */
import type { AuthorizeMatch } from '../authorization/authorize-match.js';
import type { Exclusions } from '../authorization/exclusions.js';
import { CACHE_AUTHORIZED_TTL, CACHE_UNAUTHORIZED_TTL, WEBHOOK_VERSION } from './apiserver-flags.js';
import type { AuthorizationMode } from './authorization-mode.js';
import { exclusionConditions, stepsCondition } from './authorize-conditions.js';
import type { WebhookMatchCondition } from './render.js';

export interface AuthorizationConfigOptions {
  /** The authorizers in order, Webhook among them (authorization-mode.ts `withWebhook`). */
  readonly modes: readonly AuthorizationMode[];
  /** The webhook authorizer's name (a DNS subdomain: the command's --name). */
  readonly name: string;
  /** Where the kubeconfig is on the control plane. */
  readonly kubeconfigFile: string;
  /** Seconds kube-apiserver waits for an answer (at most 30). */
  readonly timeoutSeconds: number;
  readonly exclusions: Exclusions;
  /** Every authorize step's match. */
  readonly matches: readonly AuthorizeMatch[];
  /** Steps may be added at run time (AdmissionProviders): send every request not excluded. */
  readonly allRequests: boolean;
}

export interface WebhookAuthorizer {
  readonly type: 'Webhook';
  readonly name: string;
  readonly webhook: {
    readonly timeout: string;
    readonly subjectAccessReviewVersion: string;
    readonly matchConditionSubjectAccessReviewVersion: 'v1';
    readonly failurePolicy: 'NoOpinion';
    readonly authorizedTTL: string;
    readonly unauthorizedTTL: string;
    readonly connectionInfo: { readonly type: 'KubeConfigFile'; readonly kubeConfigFile: string };
    readonly matchConditions: readonly { readonly expression: string }[];
  };
}

export interface AuthorizationConfiguration {
  readonly apiVersion: 'apiserver.config.k8s.io/v1';
  readonly kind: 'AuthorizationConfiguration';
  readonly authorizers: readonly ({ readonly type: string; readonly name: string } | WebhookAuthorizer)[];
}

/** The match conditions: the exclusions, then "some step matches" (left out when steps may come at run time). */
export function authorizerConditions(options: AuthorizationConfigOptions): WebhookMatchCondition[] {
  const steps = stepsCondition(options.matches, options.allRequests);
  return [...exclusionConditions(options.exclusions), ...(steps ? [steps] : [])];
}

export function renderAuthorizationConfig(options: AuthorizationConfigOptions): AuthorizationConfiguration {
  return {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AuthorizationConfiguration',
    authorizers: options.modes.map((mode) =>
      mode === 'Webhook'
        ? {
            type: 'Webhook',
            name: options.name,
            webhook: {
              timeout: `${options.timeoutSeconds}s`,
              subjectAccessReviewVersion: WEBHOOK_VERSION,
              matchConditionSubjectAccessReviewVersion: 'v1',
              failurePolicy: 'NoOpinion',
              authorizedTTL: CACHE_AUTHORIZED_TTL,
              unauthorizedTTL: CACHE_UNAUTHORIZED_TTL,
              connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: options.kubeconfigFile },
              // The configuration names no condition: each expression stands for itself in the apiserver's errors.
              matchConditions: authorizerConditions(options).map(({ expression }) => ({ expression })),
            },
          }
        : // The name kube-apiserver gives each non-webhook authorizer it builds from --authorization-mode.
          { type: mode, name: mode.toLowerCase() },
    ),
  };
}
