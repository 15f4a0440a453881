/**
 * One step of the authorize chain (`POST /authorize`): an in-process plugin's `authorize` hook, or a remote
 * provider that speaks SubjectAccessReview. A step forbids (`{ deny: reason }`) or has no opinion
 * (undefined); it can never grant.
 */
import type { Logger } from '../base/log.js';
import type { AuthorizationAttributes } from './attributes.js';
import type { AuthorizeMatch, CompiledAuthorizeMatch } from './authorize-match.js';

export type AuthorizeVerdict = { readonly deny: string } | undefined;

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
  invoke(call: AuthorizeCall): AuthorizeVerdict | Promise<AuthorizeVerdict>;
  /** Describes the step for `/chain`. */
  describe(): Readonly<Record<string, unknown>>;
}
