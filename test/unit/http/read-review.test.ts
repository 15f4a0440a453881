import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import {
  BudgetExceededError,
  ByteBudget,
  SMALL_REVIEW_BYTES,
  WEIGHT_PER_BODY_BYTE,
} from '../../../server/http/byte-budget.js';
import { readReview, type ReviewKoaContext } from '../../../server/http/review-middleware.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';

/** A request whose body is `body`, sent in one piece with its Content-Length. */
function request(body: Buffer): IncomingMessage {
  const stream = new PassThrough();
  Object.assign(stream, {
    headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
  });
  stream.end(body);
  return stream as unknown as IncomingMessage;
}

describe('reading a review against the byte budget', () => {
  it('gives its body back at once when the objects it parses into do not fit: no other review is shed for it', async () => {
    // Large (over SMALL_REVIEW_BYTES once weighed): it may not take the share kept for small reviews.
    const review = podCreate();
    requestOf(review).object!.metadata!.annotations = { pad: 'x'.repeat(300_000) };
    const body = Buffer.from(JSON.stringify(review));
    const bodyWeight = body.length * WEIGHT_PER_BODY_BYTE;
    assert.ok(bodyWeight > SMALL_REVIEW_BYTES);
    // Room for the body as it arrives, not for the objects and arrays parsed from it.
    const budget = new ByteBudget(16 * (bodyWeight + 1024 * 1024));
    const other = budget.lease();
    other.take(budget.limit - budget.reserved - bodyWeight - 1, true);
    const lease = budget.lease();
    const ctx = {
      req: request(body),
      maxRequestBytes: 1024 * 1024,
      bodyTiming: { bodyTimeoutSeconds: 10, minBodyBytesPerSecond: 1024 },
      state: { lease },
    } as unknown as ReviewKoaContext;

    await assert.rejects(
      readReview(ctx, () => Promise.resolve()) as Promise<void>,
      (err) => err instanceof BudgetExceededError && !err.never,
    );

    // What the gateway holds is the other review's bytes alone, while the 429 is still to be written.
    assert.deepEqual({ held: lease.bytes, inUse: budget.inUse }, { held: 0, inUse: other.bytes });
    // The 429 still names the review it refuses.
    assert.equal(ctx.state.review?.request.uid, requestOf(review).uid);
  });
});
