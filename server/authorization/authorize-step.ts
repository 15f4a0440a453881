/**
 * One step of the authorize chain (`POST /authorize`): an in-process plugin's `authorize` hook, or a remote
 * provider that speaks SubjectAccessReview. A step forbids (`{ denied: true, reason }`) or has no opinion
 * (`{ denied: false }`); it can never grant.
 */
import type { Logger } from '../base/log.js';
import type { AuthorizationAttributes } from './attributes.js';
import type { AuthorizeMatch, CompiledAuthorizeMatch } from './authorize-match.js';

/**
 * What the authorize path comes to, for one step and for the chain alike: forbidden with a reason (the chain's
 * names the step that forbids), or no opinion.
 */
export type AuthorizeDecision = { readonly denied: true; readonly reason: string } | { readonly denied: false };

/** No opinion: one object for every such decision. */
export const NO_OPINION: AuthorizeDecision = Object.freeze({ denied: false });

export interface AuthorizeCall {
  readonly attributes: AuthorizationAttributes;
  /** The labels of the request's namespace (none for a cluster-wide request, or an unknown namespace). */
  readonly namespaceLabels: Readonly<Record<string, string>> | undefined;
  /** Aborts when the step's time is up. */
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  readonly log: Logger;
}

export interface AuthorizeStep {
  readonly name: string;
  readonly source: 'plugin' | 'provider';
  readonly order: number;
  readonly failurePolicy: 'Fail' | 'Ignore';
  readonly timeoutMs: number;
  readonly match: CompiledAuthorizeMatch;
  readonly matchSpec: AuthorizeMatch;
  invoke(call: AuthorizeCall): AuthorizeDecision | Promise<AuthorizeDecision>;
  /** Describes the step for `/chain`. */
  describe(): Readonly<Record<string, unknown>>;
}
