// What the decision-trace buffer's `add` costs a review, alone: the bench's Pod review through the shipped chain
// (a fresh uid each, explain.keep: all), reviewed in batches of BATCH with a listener that keeps nothing, then each
// batch's reviews handed to a TraceBuffer of the gateway's default size, timed. The reviews are fresh, so the
// timing includes what a trace works out when it is kept (each step's own patch on /mutate). Prints, per route, the
// median and the fastest batch's µs per `add` over the batches after the first WARM_BATCHES. No PASS/FAIL: it is
// the part of `node bench/trace-cost.mjs --parts`'s `kept` minus `annotated` that the buffer pays, measured without
// the review's own noise around it. Pinned to core 0 by the caller if wanted (taskset -c 0). Uses dist/.
/* global process, console */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const BATCH = 2000;
const BATCHES = Number(process.env.TRACE_ADD_BATCHES ?? 40);
const WARM_BATCHES = 10;

const { decodeReview } = await import(`${DIST}/server/admission/codec.js`);
const { selectionOf } = await import(`${DIST}/server/http/routes.js`);
const { TraceBuffer } = await import(`${DIST}/server/explain/trace-buffer.js`);
const { compileRedaction } = await import(`${DIST}/server/recording/redact.js`);
const { parseConfigText } = await import(`${DIST}/server/config/load.js`);
const { reviewSetup, withUid } = await import('./review-setup.mjs');

const body = readFileSync(path.join(ROOT, 'test/fixtures/reviews/pod-create.json'), 'utf8');
const yaml = readFileSync(path.join(ROOT, 'gateway.yaml'), 'utf8');
const { reviewer } = await reviewSetup(ROOT, `${yaml}\nexplain: { keep: all }\n`, { keepTrace: () => {} });
const { explain } = parseConfigText(yaml, 'gateway.yaml', ROOT);

let n = 0;
for (const routeName of ['mutate', 'validate']) {
  const route = selectionOf(routeName);
  const buffer = new TraceBuffer({
    size: explain.bufferSize,
    maxBytes: explain.maxBytes,
    includeObjects: false,
    redaction: compileRedaction([]),
    keep: 'all',
  });
  const perAdd = [];
  for (let batch = 0; batch < BATCHES; batch++) {
    const reviewed = [];
    for (let i = 0; i < BATCH; i++) {
      const text = withUid(body, n++);
      const { request } = decodeReview(text);
      reviewed.push((await reviewer.review(request, route, { timeoutMs: 10_000 })).reviewed);
    }
    const start = process.hrtime.bigint();
    for (const r of reviewed) buffer.add(r);
    perAdd.push(Number(process.hrtime.bigint() - start) / BATCH / 1000);
  }
  const timed = perAdd.slice(WARM_BATCHES).sort((a, b) => a - b);
  console.log(
    `/${routeName}: ${timed[timed.length >> 1].toFixed(2)} µs a trace kept (median of ${timed.length} batches of ${BATCH}), fastest batch ${timed[0].toFixed(2)}`,
  );
}
