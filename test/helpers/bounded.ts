/** For hostile-input tests: what the gateway answers and logs stays small, whatever it was sent. */
import assert from 'node:assert/strict';
import type { Harness, HttpAnswer } from './gateway-harness.js';

/** Far more than any bounded answer or log line needs, far less than what the hostile tests send. */
const BOUND = 16 * 1024;

export function assertBounded(h: Harness, answer: HttpAnswer): void {
  assert.ok(answer.text.length < BOUND, `answer of ${answer.text.length} characters`);
  const longest = Math.max(...h.logs.map((line) => JSON.stringify(line).length));
  assert.ok(longest < BOUND, `a log line of ${longest} characters`);
}
