// Worker thread of the fixed-rate load generator: wakes at each scheduled send time (Atomics.wait with a
// fractional-millisecond timeout, far finer than the event loop's 1 ms timers) and posts the index of the
// latest request that is due. The main thread sends every request up to that index and measures each
// one's latency from its *scheduled* time, so any lag here or in the main thread counts against the
// result rather than hiding queueing (coordinated omission). It wakes `leadMs` early, because a wake-up
// from Atomics.wait plus the message hop to the main thread take ~0.1 ms; the main thread never sends
// before a request's scheduled time (it spins out the remainder of the lead).
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

const { startAbs, periodMs, count, leadMs } = workerData;
const start = startAbs - performance.timeOrigin; // the main thread's start instant, on this thread's clock
const cell = new Int32Array(new SharedArrayBuffer(4));
let next = 0;
while (next < count) {
  const due = start + next * periodMs - leadMs;
  let now = performance.now();
  while (now < due) {
    Atomics.wait(cell, 0, 0, due - now);
    now = performance.now();
  }
  const latestDue = Math.min(count - 1, Math.floor((now + leadMs - start) / periodMs));
  parentPort.postMessage(latestDue);
  next = latestDue + 1;
}
