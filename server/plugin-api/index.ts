/**
 * The plugin author API: the only gateway module a plugin imports.
 *
 * ```ts
 * import { allow, definePlugin, deny, on } from '../server/plugin-api/index.js';
 *
 * export default definePlugin({
 *   name: 'require-team-label',
 *   match: on('pods').create(),
 *   setup: () => ({
 *     validate: ({ object }) => (object?.metadata?.labels?.team ? allow() : deny('missing label "team"')),
 *   }),
 * });
 * ```
 */
import { toMatch, type MatchSpec } from './match-builder.js';
import type { KubeObject, Plugin, Verdict } from './types.js';

export type * from './types.js';
export type * from './objects.js';
export { MatchBuilder, MatchDefinitionError, POD_SPEC_RESOURCES, on, podSpecResources } from './match-builder.js';
export type { MatchSpec, MatchedObject } from './match-builder.js';
export { isObject, own, type JsonObject } from './json.js';
export { QUALIFIED_NAME_RULE, isLabelKey, isLabelValue, isQualifiedName } from '../config/names.js';
export { PatternError, compilePattern, type Pattern } from '../base/pattern.js';
export {
  SettingsError,
  settingsObject,
  optionalBoolean,
  optionalEnum,
  optionalString,
  optionalStringList,
  optionalStringMap,
} from './settings.js';

/** What `definePlugin` takes: a plugin whose `match` may be a builder (`on('pods').create()`). */
export interface PluginDefinition<S, T extends object> extends Omit<Plugin<S, T>, 'match'> {
  readonly match: MatchSpec<T>;
}

/**
 * Declares a plugin. TypeScript infers the settings' type from `settings` and the objects' type from a
 * `match` written with `on(...)`; the match is turned into webhook rules here, so a mistake in it fails
 * when the module is loaded, naming the rule.
 */
export function definePlugin<S = undefined, T extends object = KubeObject>(
  definition: PluginDefinition<S, T>,
): Plugin<S, T> {
  return Object.freeze({ ...definition, match: toMatch(definition.match) });
}

const ALLOWED: Verdict = Object.freeze({ allowed: true });

/** The request may proceed. Add warnings or audit annotations with `ctx.warn` / `ctx.annotate`. */
export function allow(): Verdict {
  return ALLOWED;
}

/**
 * The request is refused with `message` (a decision, final under any failurePolicy). `code` is the HTTP
 * status the client sees; values under 400 are raised to 400 as the apiserver does.
 */
export function deny(message: string, code = 403): Verdict {
  return { allowed: false, message, code: code < 400 ? 400 : code };
}
