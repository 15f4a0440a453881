/**
 * How much memory the process may use, and the default in-flight budget derived from it: the container's
 * (cgroup) limit as Node reads it, which is what gets the pod OOM-killed; without one, what V8 may give the
 * heap plus a margin for buffers outside it (a process started with --max-old-space-size lets reviews hold
 * less), and never more than the host has. What the gateway holds besides reviews is measured, not assumed:
 * it depends on what the process loaded (cluster mode, tracing, the plugins) and on the heap V8 sized for
 * the limit.
 */
import { totalmem } from 'node:os';
import v8 from 'node:v8';
import { SMALL_REVIEW_SHARE, WEIGHT_PER_BODY_BYTE } from './byte-budget.js';

export interface MemoryLimit {
  readonly bytes: number;
  /** Where the figure comes from, for the start-up log line. */
  readonly source: 'cgroup' | 'heap';
}

/** Bytes outside the V8 heap that buffers and native state may add to a heap-bound process. */
const OUTSIDE_HEAP_BYTES = 64 * 1024 * 1024;

/**
 * The share of the limit the baseline and the reviews in flight may fill together. The rest is for what the
 * weights do not see: the heap's working set growing under steady traffic past the baseline measured at
 * start, garbage not yet collected, connection buffers (docs/decisions.md).
 */
export const LIMIT_SHARE = 0.8;

/**
 * What the gateway holds before its first review: its resident memory once it has loaded its modules, chain
 * and certificate. Measured at start, when nothing else is held yet.
 */
export function measureBaseline(): number {
  return process.memoryUsage.rss();
}

export function memoryLimit(): MemoryLimit {
  const host = totalmem();
  // 0, or a huge number, when no limit is set (the cgroup's "max").
  const cgroup = process.constrainedMemory?.() ?? 0;
  if (cgroup > 0 && cgroup < host) return { bytes: cgroup, source: 'cgroup' };
  return { bytes: Math.min(host, v8.getHeapStatistics().heap_size_limit + OUTSIDE_HEAP_BYTES), source: 'heap' };
}

/**
 * The default server.maxInflightBytes: what LIMIT_SHARE of the limit leaves after the measured baseline, and
 * never so little that one body of server.maxRequestBytes would not fit beside the share kept for small reviews
 * (or such a review could never be answered).
 */
export function defaultInflightBytes(limit: MemoryLimit, baselineBytes: number, maxRequestBytes: number): number {
  return Math.max(
    Math.floor(limit.bytes * LIMIT_SHARE) - baselineBytes,
    Math.ceil((maxRequestBytes * WEIGHT_PER_BODY_BYTE) / (1 - SMALL_REVIEW_SHARE)),
  );
}
