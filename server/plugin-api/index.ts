/**
 * The plugin author API: the only gateway module a plugin imports.
 *
 * ```ts
 * import { definePlugin, allow, deny } from '../server/plugin-api/index.js';
 * export default definePlugin({
 *   name: 'require-team-label',
 *   match: { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] },
 *   validate: ({ object }) => (object?.metadata?.labels?.team ? allow() : deny('missing label "team"')),
 * });
 * ```
 */
import type { KubeObject, Plugin, Verdict } from './types.js';

export type * from './types.js';
export {
  SettingsError,
  settingsObject,
  optionalBoolean,
  optionalEnum,
  optionalString,
  optionalStringList,
  optionalStringMap,
} from './settings.js';

/** Declares a plugin. Identity at run time; it exists so TypeScript infers settings and object types. */
export function definePlugin<S = undefined, T extends KubeObject = KubeObject>(plugin: Plugin<S, T>): Plugin<S, T> {
  return plugin;
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
