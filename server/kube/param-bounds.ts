/**
 * What the watches of `fromCluster` params may hold (docs/decisions.md, "Params from the cluster: bounded watches"):
 * each paramRef query at most `maxObjects` objects and `maxBytes` bytes of JSON, all queries of the process
 * together at most `maxTotalObjects` and `maxTotalBytes`. The ledger counts what each query's cache holds, object
 * by object, so an add, an update or a relist is weighed before it is kept; past a bound the query is "over its
 * bound" (server/kube/param-watch.ts drops its cache).
 */
import type { PolicyParamsConfig } from '../config/types.js';

/** The bound a query went past: the config field that sets it, and its value. */
export interface OverBound {
  readonly field: keyof PolicyParamsConfig;
  readonly limit: number;
}

export interface Held {
  readonly objects: number;
  readonly bytes: number;
}

/** One query's share of the ledger. */
export interface QueryTally {
  /** Keeps object `id` at `bytes` (replacing what it weighed before); the bound it goes past, if any. */
  set(id: string, bytes: number): OverBound | undefined;
  delete(id: string): void;
  /** Forgets everything the query held (its cache was dropped, or its watch ended). */
  clear(): void;
  /** Whether a list of `held` would fit, replacing what the query holds now. */
  fits(held: Held): OverBound | undefined;
  held(): Held;
}

export interface ParamLedger {
  query(): QueryTally;
  /** What every query holds together. */
  held(): Held;
}

/** The bound `held` goes past, per query or (`total` held by all queries, this one's share included) in all. */
function overBound(bounds: PolicyParamsConfig, held: Held, total: Held): OverBound | undefined {
  if (held.objects > bounds.maxObjects) return { field: 'maxObjects', limit: bounds.maxObjects };
  if (held.bytes > bounds.maxBytes) return { field: 'maxBytes', limit: bounds.maxBytes };
  if (total.objects > bounds.maxTotalObjects) return { field: 'maxTotalObjects', limit: bounds.maxTotalObjects };
  if (total.bytes > bounds.maxTotalBytes) return { field: 'maxTotalBytes', limit: bounds.maxTotalBytes };
  return undefined;
}

export function createParamLedger(bounds: PolicyParamsConfig): ParamLedger {
  let totalObjects = 0;
  let totalBytes = 0;
  const total = (): Held => ({ objects: totalObjects, bytes: totalBytes });
  return {
    held: total,
    query() {
      const sizes = new Map<string, number>();
      let bytes = 0;
      const held = (): Held => ({ objects: sizes.size, bytes });
      const remove = (id: string) => {
        const before = sizes.get(id);
        if (before === undefined) return;
        sizes.delete(id);
        bytes -= before;
        totalObjects -= 1;
        totalBytes -= before;
      };
      return {
        held,
        set(id, size) {
          remove(id);
          sizes.set(id, size);
          bytes += size;
          totalObjects += 1;
          totalBytes += size;
          return overBound(bounds, held(), total());
        },
        delete: remove,
        clear() {
          for (const id of [...sizes.keys()]) remove(id);
        },
        fits(list) {
          const mine = held();
          return overBound(bounds, list, {
            objects: totalObjects - mine.objects + list.objects,
            bytes: totalBytes - mine.bytes + list.bytes,
          });
        },
      };
    },
  };
}

/** The bytes an object weighs: its JSON's, computed once per object. */
const weights = new WeakMap<object, number>();
export function objectBytes(object: object): number {
  let bytes = weights.get(object);
  if (bytes === undefined) {
    bytes = Buffer.byteLength(JSON.stringify(object));
    weights.set(object, bytes);
  }
  return bytes;
}

/** What a binding reading an over-bound query is told (after `failed to configure binding: `). */
export function overBoundError(params: string, over: OverBound): string {
  const what =
    over.field === 'maxObjects'
      ? `more than ${over.limit} objects`
      : over.field === 'maxBytes'
        ? `more than ${over.limit} bytes`
        : over.field === 'maxTotalObjects'
          ? `more than the ${over.limit} objects all params together may hold`
          : `more than the ${over.limit} bytes all params together may hold`;
  return `the params ${params} exceed the gateway's bound (${what}, kube.policyParams.${over.field}): none are read until they fit`;
}
