/**
 * The plugins compiled into the gateway. Listing one here only makes it available: `gateway.yaml`'s
 * `chain` decides which run, in which order, and with which settings.
 */
import type { Plugin } from '../server/plugin-api/index.js';
import accessGuard from './access-guard.js';
import defaultLabels from './default-labels.js';
import imagePolicy from './image-policy.js';
import podSecurity from './pod-security.js';
import requireLabels from './require-labels.js';
import resourceDefaults from './resource-defaults.js';

export const plugins = [defaultLabels, requireLabels, imagePolicy, resourceDefaults, podSecurity, accessGuard] as const;

/** The same list, typed for the gateway, which handles every plugin's settings as opaque values. */
export const availablePlugins: readonly Plugin<unknown, object>[] = plugins;
