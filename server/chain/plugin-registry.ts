/**
 * The plugins compiled into this build, checked once at start (apiserver plugins.go: registration is
 * separate from ordering; the config's chain decides order).
 */
import { PluginRegistrationError } from '../base/errors.js';
import type { Plugin } from '../plugin-api/types.js';
import { isDnsLabel } from '../config/names.js';

export type AnyPlugin = Plugin<unknown, object>;
export type PluginRegistry = ReadonlyMap<string, AnyPlugin>;

export function createPluginRegistry(plugins: readonly AnyPlugin[]): PluginRegistry {
  const registry = new Map<string, AnyPlugin>();
  plugins.forEach((plugin, index) => {
    const name: unknown = plugin?.name;
    if (typeof name !== 'string' || !isDnsLabel(name)) {
      throw new PluginRegistrationError(
        `plugin at index ${index} has name ${JSON.stringify(name)}: expected a kebab-case name (lower-case DNS-1123 label)`,
      );
    }
    if (registry.has(name)) throw new PluginRegistrationError(`plugin "${name}" is registered twice`);
    if (typeof plugin.setup !== 'function') {
      throw new PluginRegistrationError(`plugin "${name}" has no setup: it could never run`);
    }
    if (!Array.isArray(plugin.match?.rules) || plugin.match.rules.length === 0) {
      throw new PluginRegistrationError(`plugin "${name}" has no match.rules: it would never run`);
    }
    registry.set(name, plugin);
  });
  return registry;
}
