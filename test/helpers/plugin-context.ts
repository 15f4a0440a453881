/**
 * Runs a plugin the way the gateway does, without the gateway: settings go through the plugin's own
 * `settings` parser, `mutate` edits a private working copy, `validate` sees frozen objects (a write
 * throws, as the gateway's read-only view does), and warnings and audit annotations are recorded.
 */
import type {
  AdmissionRequest,
  BaseContext,
  KubeObject,
  Logger,
  MutateContext,
  MutateOutcome,
  Plugin,
  ValidateContext,
  Verdict,
} from '../../server/plugin-api/index.js';

/** What a plugin reported besides its outcome. */
export interface Recorded {
  readonly warnings: string[];
  /** Keys as the plugin wrote them; the gateway qualifies them as `<plugin>.<key>`. */
  readonly annotations: Record<string, string>;
}

export interface Harness<C> {
  readonly ctx: C;
  readonly recorded: Recorded;
  /** Aborts `ctx.signal`, as the gateway does when the plugin's time is up. */
  readonly controller: AbortController;
}

const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

function deepFreeze<V>(value: V): V {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

function frozenCopy<T extends KubeObject>(object: KubeObject | null | undefined): Readonly<T> | undefined {
  return object ? deepFreeze(structuredClone(object) as T) : undefined;
}

/** The plugin's settings as the gateway would hold them; throws the plugin's SettingsError. */
export function parseSettings<S, T extends KubeObject>(plugin: Plugin<S, T>, raw?: unknown): S {
  if (plugin.settings) return plugin.settings(raw);
  if (raw !== undefined) throw new Error(`plugin "${plugin.name}" takes no settings`);
  return undefined as S;
}

function baseContext<S>(
  request: AdmissionRequest,
  settings: S,
): { base: BaseContext<S>; recorded: Recorded; controller: AbortController } {
  const recorded: Recorded = { warnings: [], annotations: {} };
  const controller = new AbortController();
  const base: BaseContext<S> = {
    request: deepFreeze(structuredClone(request)),
    operation: request.operation,
    settings,
    signal: controller.signal,
    log: silentLogger,
    dryRun: request.dryRun === true,
    warn: (message) => {
      recorded.warnings.push(message);
    },
    annotate: (key, value) => {
      recorded.annotations[key] = value;
    },
  };
  return { base, recorded, controller };
}

export function createMutateContext<S, T extends KubeObject>(
  plugin: Plugin<S, T>,
  request: AdmissionRequest,
  rawSettings?: unknown,
): Harness<MutateContext<S, T>> {
  if (!request.object) throw new Error('the gateway runs mutate only for requests that carry an object');
  const { base, recorded, controller } = baseContext(request, parseSettings(plugin, rawSettings));
  const ctx: MutateContext<S, T> = {
    ...base,
    object: structuredClone(request.object) as T,
    oldObject: frozenCopy<T>(request.oldObject),
  };
  return { ctx, recorded, controller };
}

export function createValidateContext<S, T extends KubeObject>(
  plugin: Plugin<S, T>,
  request: AdmissionRequest,
  rawSettings?: unknown,
): Harness<ValidateContext<S, T>> {
  const { base, recorded, controller } = baseContext(request, parseSettings(plugin, rawSettings));
  const ctx: ValidateContext<S, T> = {
    ...base,
    object: frozenCopy<T>(request.object),
    oldObject: frozenCopy<T>(request.oldObject),
  };
  return { ctx, recorded, controller };
}

export interface MutateRun<T> extends Recorded {
  readonly outcome: MutateOutcome;
  /** The working copy after `mutate`. */
  readonly object: T;
}

export interface ValidateRun extends Recorded {
  readonly verdict: Verdict;
}

/** Parses `rawSettings`, runs `mutate` on a copy of `request.object` and returns what it did. */
export async function runMutate<S, T extends KubeObject>(
  plugin: Plugin<S, T>,
  request: AdmissionRequest,
  rawSettings?: unknown,
): Promise<MutateRun<T>> {
  if (!plugin.mutate) throw new Error(`plugin "${plugin.name}" has no mutate`);
  const { ctx, recorded } = createMutateContext(plugin, request, rawSettings);
  const outcome = await plugin.mutate(ctx);
  return { outcome, object: ctx.object, ...recorded };
}

/** Parses `rawSettings`, runs `validate` on frozen copies of the request's objects and returns the verdict. */
export async function runValidate<S, T extends KubeObject>(
  plugin: Plugin<S, T>,
  request: AdmissionRequest,
  rawSettings?: unknown,
): Promise<ValidateRun> {
  if (!plugin.validate) throw new Error(`plugin "${plugin.name}" has no validate`);
  const { ctx, recorded } = createValidateContext(plugin, request, rawSettings);
  const verdict = await plugin.validate(ctx);
  return { verdict, ...recorded };
}
