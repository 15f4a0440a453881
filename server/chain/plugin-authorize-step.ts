/** Adapts a plugin's `authorize` hook to the authorize chain's step. */
import { verbOf, type SelectorRequirement } from '../authorization/attributes.js';
import {
  NO_OPINION,
  type AuthorizeCall,
  type AuthorizeDecision,
  type AuthorizeStep,
} from '../authorization/authorize-step.js';
import { compileAuthorizeMatch, type AuthorizeMatch } from '../authorization/authorize-match.js';
import type { Logger } from '../base/log.js';
import { isThenable } from '../base/thenable.js';
import type { AuthorizeContext, AuthorizeResult, PluginHandlers } from '../plugin-api/types.js';

export interface PluginAuthorizeOptions {
  readonly name: string;
  readonly plugin: string;
  readonly description: string | undefined;
  readonly order: number;
  readonly failurePolicy: 'Fail' | 'Ignore';
  readonly timeoutMs: number;
  readonly matchSpec: AuthorizeMatch;
  readonly authorize: NonNullable<PluginHandlers['authorize']>;
}

const NO_USER_EXTRA: Readonly<Record<string, readonly string[]>> = Object.freeze({});
const NO_REQUIREMENTS: readonly SelectorRequirement[] = Object.freeze([]);

/** The context a plugin's `authorize` receives; getters, so what it never reads costs nothing. */
class PluginAuthorizeContext implements AuthorizeContext {
  constructor(private readonly call: AuthorizeCall) {}

  get verb(): string {
    return verbOf(this.call.attributes);
  }
  get apiGroup(): string {
    return this.call.attributes.resource?.group ?? '';
  }
  get apiVersion(): string {
    return this.call.attributes.resource?.version ?? '';
  }
  get resource(): string {
    return this.call.attributes.resource?.resource ?? '';
  }
  get subresource(): string {
    return this.call.attributes.resource?.subresource ?? '';
  }
  get namespace(): string {
    return this.call.attributes.resource?.namespace ?? '';
  }
  get name(): string {
    return this.call.attributes.resource?.name ?? '';
  }
  get path(): string {
    return this.call.attributes.nonResource?.path ?? '';
  }
  get labelSelector(): readonly SelectorRequirement[] {
    return this.call.attributes.resource?.labelSelector ?? NO_REQUIREMENTS;
  }
  get fieldSelector(): readonly SelectorRequirement[] {
    return this.call.attributes.resource?.fieldSelector ?? NO_REQUIREMENTS;
  }
  get user(): AuthorizeContext['user'] {
    const a = this.call.attributes;
    return { username: a.user, uid: a.uid, groups: a.groups, extra: a.extra ?? NO_USER_EXTRA };
  }
  get namespaceLabels(): Readonly<Record<string, string>> | undefined {
    return this.call.namespaceLabels;
  }
  get signal(): AbortSignal {
    return this.call.signal;
  }
  get log(): Logger {
    return this.call.log;
  }
}

/** The plugin's verdict as the authorize chain's decision: the plugin API's Verdict stops here. */
function toDecision(result: AuthorizeResult): AuthorizeDecision {
  if (result === undefined || result === null || result.allowed) return NO_OPINION;
  if (typeof result.message !== 'string') throw new Error('authorize returned a denial without a message');
  return { denied: true, reason: result.message };
}

export function createPluginAuthorizeStep(options: PluginAuthorizeOptions): AuthorizeStep {
  const { authorize } = options;
  return {
    name: options.name,
    source: 'plugin',
    order: options.order,
    failurePolicy: options.failurePolicy,
    timeoutMs: options.timeoutMs,
    match: compileAuthorizeMatch(options.matchSpec),
    matchSpec: options.matchSpec,
    invoke(call) {
      const result = authorize(new PluginAuthorizeContext(call));
      return isThenable<AuthorizeResult>(result) ? Promise.resolve(result).then(toDecision) : toDecision(result);
    },
    describe: () => ({
      name: options.name,
      source: 'plugin',
      plugin: options.plugin,
      phase: 'authorize',
      order: options.order,
      description: options.description,
      failurePolicy: options.failurePolicy,
      timeoutSeconds: options.timeoutMs / 1000,
      match: options.matchSpec,
    }),
  };
}
