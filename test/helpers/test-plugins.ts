/**
 * Test-only plugins with named behaviours, in the spirit of apiserver's testing/webhook_server.go
 * (`/allow`, `/disallowReason`, `/internalErr`, `/invalidResp`, ...). Each gateway under test gets its
 * own set from `createTestPlugins()`, so the call log and the release gate belong to one test.
 *
 * Every plugin takes an optional `tag` setting (default: the plugin name) under which it records its
 * calls; give each chain entry its own `name:` and `tag` to tell several instances apart.
 */
import type { AnyPlugin } from '../../server/chain/plugin-registry.js';
import {
  SettingsError,
  allow,
  definePlugin,
  deny,
  optionalBoolean,
  optionalString,
  optionalStringList,
  optionalStringMap,
  settingsObject,
  type BaseContext,
  type JsonPatchOperation,
  type KubeObject,
  type Match,
  type MutateResult,
  type Operation,
  type Verdict,
} from '../../server/plugin-api/index.js';

export type CallEvent = 'call' | 'end' | 'aborted' | 'refused';

/** One thing a test plugin did, in the order it happened. */
export interface CallRecord {
  readonly tag: string;
  readonly event: CallEvent;
  readonly phase: 'mutate' | 'validate';
  readonly operation: Operation;
  readonly dryRun: boolean;
  /** A copy of the object's labels at that moment; undefined when the request has no object. */
  readonly labels?: Readonly<Record<string, string>>;
  /** e.g. the abort reason's name for `aborted`, the error message for `refused`. */
  readonly detail?: string;
}

interface Waiter {
  readonly test: (record: CallRecord) => boolean;
  readonly resolve: (record: CallRecord) => void;
}

/** What the test plugins did, shared with the test; lets a test await an event instead of sleeping. */
export class CallLog {
  readonly records: CallRecord[] = [];
  private readonly waiters = new Set<Waiter>();

  record(record: CallRecord): void {
    this.records.push(record);
    for (const waiter of [...this.waiters]) {
      if (waiter.test(record)) {
        this.waiters.delete(waiter);
        waiter.resolve(record);
      }
    }
  }

  /** `tag:event` for every record, in order, e.g. `['first:call', 'second:call']`. */
  sequence(): string[] {
    return this.records.map((r) => `${r.tag}:${r.event}`);
  }

  /** Only the records of `tag`. */
  of(tag: string): CallRecord[] {
    return this.records.filter((r) => r.tag === tag);
  }

  /**
   * The first record (already seen or still to come) that passes `test`. Rejects when `signal` aborts,
   * or — when no signal is given — after `timeoutMs`, so a broken test fails instead of hanging.
   */
  waitFor(test: (record: CallRecord) => boolean, options: { signal?: AbortSignal; timeoutMs?: number } = {}) {
    const seen = this.records.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise<CallRecord>((resolve, reject) => {
      const signal = options.signal ?? AbortSignal.timeout(options.timeoutMs ?? 5000);
      const onAbort = () => {
        this.waiters.delete(waiter);
        reject(signal.reason instanceof Error ? signal.reason : new Error('stopped waiting for a plugin call'));
      };
      const waiter: Waiter = {
        test,
        resolve: (record) => {
          signal.removeEventListener('abort', onAbort);
          resolve(record);
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** A latch the test opens; `slow-async` with `awaitRelease: true` waits for it. */
export class Gate {
  private opened = false;
  private readonly waiting = new Set<() => void>();

  release(): void {
    this.opened = true;
    for (const open of this.waiting) open();
    this.waiting.clear();
  }

  wait(signal: AbortSignal): Promise<void> {
    if (this.opened) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const open = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.waiting.delete(open);
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      this.waiting.add(open);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Every operation, every resource: test plugins run wherever the chain entry's own match lets them. */
export const MATCH_EVERYTHING: Match = {
  rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
};

function labelsOf(object: Readonly<KubeObject> | undefined): Record<string, string> | undefined {
  if (!object) return undefined;
  // The object is a tracking Proxy: copy through JSON rather than structuredClone (which refuses proxies).
  return JSON.parse(JSON.stringify(object.metadata?.labels ?? {})) as Record<string, string>;
}

function setLabels(object: KubeObject, labels: Readonly<Record<string, string>>): void {
  object.metadata ??= {};
  object.metadata.labels ??= {};
  for (const [key, value] of Object.entries(labels)) object.metadata.labels[key] = value;
}

function requiredString(obj: Record<string, unknown>, key: string): string {
  const value = optionalString(obj, key, '');
  if (!value) throw new SettingsError(key, 'is required');
  return value;
}

export interface TestPlugins {
  readonly plugins: readonly AnyPlugin[];
  readonly calls: CallLog;
  /** Opened by the test; `slow-async` with `awaitRelease: true` answers only after it. */
  readonly gate: Gate;
}

interface Tagged {
  readonly tag: string;
}

/** The plugins, bound to a fresh call log and gate. */
export function createTestPlugins(): TestPlugins {
  const calls = new CallLog();
  const gate = new Gate();

  /** Records what the plugin entry tagged `tag` saw in `phase`. */
  const recorder =
    (phase: CallRecord['phase'], tag: string) =>
    (
      ctx: BaseContext & { readonly object: Readonly<KubeObject> | undefined },
      event: CallEvent = 'call',
      detail?: string,
    ) => {
      const labels = labelsOf(ctx.object);
      calls.record({
        tag,
        event,
        phase,
        operation: ctx.operation,
        dryRun: ctx.dryRun,
        ...(labels ? { labels } : {}),
        ...(detail !== undefined ? { detail } : {}),
      });
    };
  const tagged = (name: string) => (raw: unknown) => {
    const s = settingsObject(raw, ['tag']);
    return { tag: optionalString(s, 'tag', name) };
  };

  /** Records a call, allows; never changes anything. */
  const recordsCalls = definePlugin({
    name: 'records-calls',
    match: MATCH_EVERYTHING,
    settings: tagged('records-calls'),
    setup: ({ tag }) => {
      const [recordMutate, recordValidate] = [recorder('mutate', tag), recorder('validate', tag)];
      return {
        mutate(ctx) {
          recordMutate(ctx);
        },
        validate(ctx) {
          recordValidate(ctx);
          return allow();
        },
      };
    },
  });

  /** Sets `labels` on the object (a mutation by editing the working copy). */
  const addLabel = definePlugin({
    name: 'add-label',
    match: MATCH_EVERYTHING,
    settings: (raw) => {
      const s = settingsObject(raw, ['tag', 'labels']);
      const labels = optionalStringMap(s, 'labels');
      if (!labels) throw new SettingsError('labels', 'is required');
      return { tag: optionalString(s, 'tag', 'add-label'), labels };
    },
    setup: ({ tag, labels }) => {
      const recordMutate = recorder('mutate', tag);
      return {
        mutate(ctx) {
          recordMutate(ctx);
          setLabels(ctx.object, labels);
        },
      };
    },
  });

  /** Returns deny(reason): a decision, never a failure. */
  const denyWithReason = definePlugin({
    name: 'deny-with-reason',
    match: MATCH_EVERYTHING,
    settings: (raw) => {
      const s = settingsObject(raw, ['tag', 'reason']);
      return { tag: optionalString(s, 'tag', 'deny-with-reason'), reason: requiredString(s, 'reason') };
    },
    setup: ({ tag, reason }) => {
      const recordValidate = recorder('validate', tag);
      return {
        validate(ctx) {
          recordValidate(ctx);
          return deny(reason);
        },
      };
    },
  });

  /** Edits the object (when `labels` is set), then throws `message`. */
  const throws = definePlugin({
    name: 'throws',
    match: MATCH_EVERYTHING,
    settings: (raw) => {
      const s = settingsObject(raw, ['tag', 'message', 'labels']);
      return {
        tag: optionalString(s, 'tag', 'throws'),
        message: optionalString(s, 'message', 'boom'),
        labels: optionalStringMap(s, 'labels'),
      };
    },
    setup: ({ tag, message, labels }) => {
      const [recordMutate, recordValidate] = [recorder('mutate', tag), recorder('validate', tag)];
      return {
        mutate(ctx) {
          recordMutate(ctx);
          if (labels) setLabels(ctx.object, labels);
          throw new Error(message);
        },
        validate(ctx) {
          recordValidate(ctx);
          throw new Error(message);
        },
      };
    },
  });

  /** Never answers: waits for its AbortSignal, records `aborted` (detail: the reason's name) and rejects. */
  const hangs = definePlugin({
    name: 'hangs',
    match: MATCH_EVERYTHING,
    settings: tagged('hangs'),
    setup: ({ tag }) => {
      const [recordMutate, recordValidate] = [recorder('mutate', tag), recorder('validate', tag)];
      return {
        async mutate(ctx) {
          recordMutate(ctx);
          await untilAborted(ctx.signal, (reason) => recordMutate(ctx, 'aborted', reason));
        },
        async validate(ctx) {
          recordValidate(ctx);
          await untilAborted(ctx.signal, (reason) => recordValidate(ctx, 'aborted', reason));
          return allow();
        },
      };
    },
  });

  /**
   * Returns JSON patch operations (default: a valid add, then a remove of a path that does not exist, so
   * the patch does not apply as a whole).
   */
  const returnsBadPatch = definePlugin({
    name: 'returns-bad-patch',
    match: MATCH_EVERYTHING,
    settings: (raw) => {
      const s = settingsObject(raw, ['tag', 'ops']);
      const ops = s.ops ?? [
        { op: 'add', path: '/metadata/labels/half-applied', value: 'yes' },
        { op: 'remove', path: '/metadata/labels/does-not-exist' },
      ];
      if (!Array.isArray(ops)) throw new SettingsError('ops', 'expected a list of JSON patch operations');
      return { tag: optionalString(s, 'tag', 'returns-bad-patch'), ops: ops as JsonPatchOperation[] };
    },
    setup: ({ tag, ops }) => {
      const recordMutate = recorder('mutate', tag);
      return {
        mutate(ctx): MutateResult {
          recordMutate(ctx);
          return ops;
        },
      };
    },
  });

  /** Returns a value that is neither a verdict nor a patch. */
  const returnsGarbage = definePlugin({
    name: 'returns-garbage',
    match: MATCH_EVERYTHING,
    settings: tagged('returns-garbage'),
    setup: ({ tag }) => {
      const [recordMutate, recordValidate] = [recorder('mutate', tag), recorder('validate', tag)];
      return {
        mutate(ctx) {
          recordMutate(ctx);
          return 42 as unknown as MutateResult;
        },
        validate(ctx) {
          recordValidate(ctx);
          return 'garbage' as unknown as Verdict;
        },
      };
    },
  });

  /**
   * Answers asynchronously once something has happened: the test released the gate (`awaitRelease`),
   * another tag was called (`awaitCall`), or another tag finished (`awaitEnd`). Then sets `labels`
   * (mutate), records `end`, and allows — or denies with `deny`. With `ignoreAbort` it keeps waiting
   * after its deadline (a plugin that ignores its signal); a write the gateway refuses is recorded as
   * `refused`.
   */
  interface SlowSettings extends Tagged {
    awaitRelease: boolean;
    ignoreAbort: boolean;
    awaitCall?: string;
    awaitEnd?: string;
    deny?: string;
    labels?: Readonly<Record<string, string>>;
    /** A warning added once it has waited (validate phase). */
    warn?: string;
  }
  const slowAsync = definePlugin({
    name: 'slow-async',
    match: MATCH_EVERYTHING,
    settings: (raw): SlowSettings => {
      const s = settingsObject(raw, [
        'tag',
        'awaitRelease',
        'ignoreAbort',
        'awaitCall',
        'awaitEnd',
        'deny',
        'labels',
        'warn',
      ]);
      const warn = optionalString(s, 'warn', '');
      const labels = optionalStringMap(s, 'labels');
      const awaitCall = optionalString(s, 'awaitCall', '');
      const awaitEnd = optionalString(s, 'awaitEnd', '');
      const reason = optionalString(s, 'deny', '');
      return {
        tag: optionalString(s, 'tag', 'slow-async'),
        awaitRelease: optionalBoolean(s, 'awaitRelease', false),
        ignoreAbort: optionalBoolean(s, 'ignoreAbort', false),
        ...(awaitCall ? { awaitCall } : {}),
        ...(awaitEnd ? { awaitEnd } : {}),
        ...(reason ? { deny: reason } : {}),
        ...(labels ? { labels } : {}),
        ...(warn ? { warn } : {}),
      };
    },
    setup: (settings) => {
      const [recordMutate, recordValidate] = [recorder('mutate', settings.tag), recorder('validate', settings.tag)];
      return {
        async mutate(ctx) {
          recordMutate(ctx);
          await awaitCondition(settings, settings.ignoreAbort ? new AbortController().signal : ctx.signal);
          if (settings.labels) {
            try {
              setLabels(ctx.object, settings.labels);
            } catch (err) {
              recordMutate(ctx, 'refused', err instanceof Error ? err.message : String(err));
              throw err;
            }
          }
          recordMutate(ctx, 'end');
          return settings.deny ? deny(settings.deny) : undefined;
        },
        async validate(ctx) {
          recordValidate(ctx);
          await awaitCondition(settings, ctx.signal);
          if (settings.warn) ctx.warn(settings.warn);
          recordValidate(ctx, 'end');
          return settings.deny ? deny(settings.deny) : allow();
        },
      };
    },
  });

  async function awaitCondition(settings: SlowSettings, signal: AbortSignal): Promise<void> {
    if (settings.awaitRelease) await gate.wait(signal);
    const { awaitCall, awaitEnd } = settings;
    if (awaitCall) await calls.waitFor((r) => r.tag === awaitCall && r.event === 'call', { signal });
    if (awaitEnd) await calls.waitFor((r) => r.tag === awaitEnd && r.event === 'end', { signal });
  }

  /** A validating plugin that tries to write to its (read-only) object. */
  const editsInValidate = definePlugin({
    name: 'edits-in-validate',
    match: MATCH_EVERYTHING,
    settings: tagged('edits-in-validate'),
    setup: ({ tag }) => {
      const recordValidate = recorder('validate', tag);
      return {
        validate(ctx) {
          recordValidate(ctx);
          setLabels(ctx.object as KubeObject, { 'sneaky-edit': 'yes' });
          return allow();
        },
      };
    },
  });

  /**
   * Sets `labels` (mutate), then keeps the event loop busy for `ms` milliseconds — a CPU-heavy in-process
   * plugin, which no timer can interrupt — then allows.
   */
  const busyLoops = definePlugin({
    name: 'busy-loops',
    match: MATCH_EVERYTHING,
    settings: (raw) => {
      const s = settingsObject(raw, ['tag', 'ms', 'labels']);
      if (typeof s.ms !== 'number') throw new SettingsError('ms', 'expected a number of milliseconds');
      return { tag: optionalString(s, 'tag', 'busy-loops'), ms: s.ms, labels: optionalStringMap(s, 'labels') };
    },
    setup: ({ tag, ms, labels }) => {
      const [recordMutate, recordValidate] = [recorder('mutate', tag), recorder('validate', tag)];
      return {
        mutate(ctx) {
          recordMutate(ctx);
          if (labels) setLabels(ctx.object, labels);
          busyWait(ms);
          recordMutate(ctx, 'end');
        },
        validate(ctx) {
          recordValidate(ctx);
          busyWait(ms);
          recordValidate(ctx, 'end');
          return allow();
        },
      };
    },
  });

  /** Adds each of `messages` as a warning (in both phases), then allows. */
  const warns = definePlugin({
    name: 'warns',
    match: MATCH_EVERYTHING,
    settings: (raw) => {
      const s = settingsObject(raw, ['tag', 'messages']);
      return { tag: optionalString(s, 'tag', 'warns'), messages: optionalStringList(s, 'messages') ?? [] };
    },
    setup: ({ tag, messages }) => {
      const [recordMutate, recordValidate] = [recorder('mutate', tag), recorder('validate', tag)];
      return {
        mutate(ctx) {
          recordMutate(ctx);
          for (const message of messages) ctx.warn(message);
        },
        validate(ctx) {
          recordValidate(ctx);
          for (const message of messages) ctx.warn(message);
          return allow();
        },
      };
    },
  });

  /** Validates only: records the call and allows (a validating extension that never touches the object). */
  const validatesOnly = definePlugin({
    name: 'validates-only',
    match: MATCH_EVERYTHING,
    settings: tagged('validates-only'),
    setup: ({ tag }) => {
      const recordValidate = recorder('validate', tag);
      return {
        validate(ctx) {
          recordValidate(ctx);
          return allow();
        },
      };
    },
  });

  const plugins: AnyPlugin[] = [
    recordsCalls,
    validatesOnly,
    addLabel,
    denyWithReason,
    throws,
    hangs,
    returnsBadPatch,
    returnsGarbage,
    slowAsync,
    editsInValidate,
    warns,
    busyLoops,
  ];
  return { plugins, calls, gate };
}

function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning on purpose
  }
}

function untilAborted(signal: AbortSignal, onAbort: (reasonName: string) => void): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener(
      'abort',
      () => {
        const reason: unknown = signal.reason;
        onAbort(reason instanceof Error || reason instanceof DOMException ? reason.name : String(reason));
        reject(reason instanceof Error ? reason : new Error(String(reason)));
      },
      { once: true },
    );
  });
}
