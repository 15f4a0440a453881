import assert from 'node:assert/strict';
import type { AdmissionProvider } from '../../../server/kube/admission-provider.js';
import {
  createServedCounter,
  type ServedCounter,
  type ServedCounterOptions,
  type ServedCounts,
  type ServedStore,
} from '../../../server/kube/served-counter.js';
import type { Logger } from '../../../server/base/log.js';
import { eventually } from '../../helpers/wait.js';

const NOW = Date.parse('2026-11-22T10:20:00Z');

class ApiError extends Error {
  constructor(readonly code: number) {
    super(`HTTP ${code}`);
  }
}

interface LogLine {
  readonly level: string;
  readonly msg: string | undefined;
}

function recordingLog(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: string) => (_obj: object, msg?: string) => lines.push({ level, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * AdmissionProviders kept as the apiserver keeps them: every write moves the resourceVersion, and a write
 * made from another resourceVersion is refused with 409. `cache()` is what one replica's informer shows:
 * the resources as they were when it last caught up (`catchUp()`), so writes from it conflict meanwhile.
 */
function apiserver(names: readonly string[], status: AdmissionProvider['status'] = {}) {
  let version = 1;
  const objects = new Map<string, AdmissionProvider>(
    names.map((name) => [
      name,
      { metadata: { name, resourceVersion: String(version) }, status: structuredClone(status) },
    ]),
  );
  const stats = { writes: 0, conflicts: 0 };
  let failNext = 0;
  const store = (cache: Map<string, AdmissionProvider>): ServedStore => ({
    cached: (name) => cache.get(name),
    names: () => [...cache.keys()],
    read: (name) => Promise.resolve(structuredClone(objects.get(name))),
    async write(name: string, resourceVersion: string, counts: ServedCounts) {
      await Promise.resolve();
      if (failNext > 0) {
        failNext--;
        throw new ApiError(500);
      }
      const object = objects.get(name);
      if (!object) throw new ApiError(404);
      if (object.metadata.resourceVersion !== resourceVersion) {
        stats.conflicts++;
        throw new ApiError(409);
      }
      object.status = { ...object.status, references: { ...object.status?.references, ...counts } };
      object.metadata.resourceVersion = String(++version);
      stats.writes++;
    },
  });
  return {
    stats,
    stored: (name: string) => objects.get(name)?.status?.references,
    /** Another writer (the status writer of some replica) changes the resource. */
    touch(name: string) {
      objects.get(name)!.metadata.resourceVersion = String(++version);
    },
    failNextWrites(n: number) {
      failNext = n;
    },
    replica() {
      const cache = new Map([...objects].map(([name, object]) => [name, structuredClone(object)]));
      return { store: store(cache), catchUp: () => objects.forEach((o, name) => cache.set(name, structuredClone(o))) };
    },
  };
}

/** A started counter on `store`, at NOW, writing at most every `flushMs` (1 ms unless said). */
function startedCounter(store: ServedStore, options: Partial<ServedCounterOptions> = {}): ServedCounter {
  const counter = createServedCounter({ store, log: recordingLog(), flushMs: 1, now: () => NOW, ...options });
  counter.start();
  return counter;
}

describe('the objects-served counter (status.references.objects across replicas)', () => {
  it('stores the exact sum of what several replicas served, retrying on every conflict from a fresh read', async () => {
    const server = apiserver(['scanner']);
    const replicas = [server.replica(), server.replica(), server.replica()];
    const counters = replicas.map((r) => startedCounter(r.store));
    let served = 0;
    for (let round = 0; round < 20; round++) {
      counters.forEach((counter, i) => {
        for (let n = 0; n <= (round + i) % 4; n++, served++) counter.served('scanner');
      });
      if (round % 3 === 0) server.touch('scanner');
      if (round % 5 === 0) replicas[round % 3]!.catchUp();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(counters.map((c) => c.stop()));
    assert.deepEqual(server.stored('scanner'), {
      objects: served,
      windowStart: '2026-11-22T10:00:00Z',
      previousWindowObjects: 0,
    });
    assert.ok(server.stats.conflicts > 0, 'the informers lagged, so writes conflicted');
  });

  it('writes what was served meanwhile in one write, and nothing more until the interval passed', async () => {
    const server = apiserver(['scanner']);
    const counter = startedCounter(server.replica().store, { flushMs: 60_000 });
    for (let i = 0; i < 100; i++) counter.served('scanner');
    await eventually('the first write', () => server.stats.writes === 1);
    counter.served('scanner');
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(server.stats.writes, 1, 'the next write waits for the interval');
    assert.equal(server.stored('scanner')?.objects, 100);
    await counter.stop();
    assert.equal(server.stored('scanner')?.objects, 101, 'stop() writes what is left');
  });

  it('keeps a count whose write failed and writes it later', async () => {
    const server = apiserver(['scanner']);
    const log = recordingLog();
    const counter = startedCounter(server.replica().store, { log });
    server.failNextWrites(2);
    for (let i = 0; i < 5; i++) counter.served('scanner');
    await eventually('the count to be written', () => server.stored('scanner')?.objects === 5);
    await counter.stop();
    assert.equal(server.stored('scanner')?.objects, 5);
    assert.equal(
      log.lines.filter((l) => l.msg?.startsWith('writing the objects served to the AdmissionProvider status failed'))
        .length,
      2,
    );
  });

  it("does not count gateway.yaml's entries nor names without an AdmissionProvider, and writes nothing for them", async () => {
    const server = apiserver(['scanner']);
    const counter = startedCounter(server.replica().store, { ignored: new Set(['from-config']) });
    counter.served('from-config');
    counter.served('no-such-provider');
    await counter.stop();
    assert.equal(server.stats.writes, 0);
  });

  it("rotates a provider's stored window once it ended, though nothing was served", async () => {
    const server = apiserver(['scanner'], {
      references: { namespaces: 3, objects: 7, windowStart: '2026-11-22T09:00:00Z', previousWindowObjects: 2 },
    });
    const counter = startedCounter(server.replica().store);
    counter.observe('scanner');
    await eventually('the window to rotate', () => server.stats.writes === 1);
    assert.deepEqual(server.stored('scanner'), {
      namespaces: 3,
      objects: 0,
      windowStart: '2026-11-22T10:00:00Z',
      previousWindowObjects: 7,
    });
    counter.observe('scanner');
    await counter.stop();
    assert.equal(server.stats.writes, 1, 'a current window is not written again');
  });

  it('takes no more counts after stop()', async () => {
    const server = apiserver(['scanner']);
    const counter = startedCounter(server.replica().store);
    await counter.stop();
    counter.served('scanner');
    assert.equal(server.stats.writes, 0);
  });
});
