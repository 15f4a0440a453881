/**
 * The plugins of the large-review lane's tests, in a module the lane's workers load (GatewayOptions.pluginsModule):
 * the shipped ones, the test plugins (test-plugins.ts: each thread has its own call log), and `spins-until`,
 * which holds its thread, as a CPU-heavy plugin does, until the test creates a file.
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { resourceLimits } from 'node:worker_threads';
import { availablePlugins } from '../../plugins/index.js';
import type { AnyPlugin } from '../../server/chain/plugin-registry.js';
import { SettingsError, allow, definePlugin, settingsObject } from '../../server/plugin-api/index.js';
import { MATCH_EVERYTHING, createTestPlugins } from './test-plugins.js';

/**
 * Logs `spinning` (with `file`), then spins until `file` exists or `maxMs` have passed, then allows: the thread it
 * runs on does nothing else meanwhile.
 */
const spinsUntil = definePlugin({
  name: 'spins-until',
  match: MATCH_EVERYTHING,
  settings: (raw) => {
    const s = settingsObject(raw, ['file', 'maxMs']);
    if (typeof s.file !== 'string') throw new SettingsError('file', 'expected a path');
    if (typeof s.maxMs !== 'number') throw new SettingsError('maxMs', 'expected a number of milliseconds');
    return { file: s.file, maxMs: s.maxMs };
  },
  setup: ({ file, maxMs }) => {
    const spin = (log: { info(obj: object, msg?: string): void }) => {
      log.info({ file }, 'spinning');
      const until = performance.now() + maxMs;
      while (!existsSync(file) && performance.now() < until) {
        // spinning on purpose
      }
    };
    return {
      mutate(ctx) {
        spin(ctx.log);
      },
      validate(ctx) {
        spin(ctx.log);
        return allow();
      },
    };
  },
});

/**
 * Warns with the young generation its thread was started with (a worker's limit, or `none` on the event loop) and
 * the heap limit V8 gave its isolate, which grows with the young generation V8 really sized.
 */
const youngGeneration = definePlugin({
  name: 'young-generation',
  match: MATCH_EVERYTHING,
  setup: () => ({
    validate(ctx) {
      const heapLimitMiB = getHeapStatistics().heap_size_limit / 2 ** 20;
      ctx.warn(
        `young generation: ${resourceLimits.maxYoungGenerationSizeMb ?? 'none'}; heap limit: ${heapLimitMiB} MiB`,
      );
      return allow();
    },
  }),
});

/** The plugins besides the shipped ones. */
export const laneTestPlugins: readonly AnyPlugin[] = [...createTestPlugins().plugins, spinsUntil, youngGeneration];

/** Every plugin, as the workers load them. */
export const lanePlugins: readonly AnyPlugin[] = [...availablePlugins, ...laneTestPlugins];

/** Where the workers find them. */
export const LANE_PLUGINS_MODULE = { url: import.meta.url, name: 'lanePlugins' } as const;
