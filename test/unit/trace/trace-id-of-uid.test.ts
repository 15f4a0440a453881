/**
 * The trace id a review's uid gives (trace/decision-trace.ts): a lower-case UUID's 32 digits, nothing for any other
 * uid; the same answer whatever uid was asked about before (it remembers its last answer). The same for the
 * decision-trace annotation made from a uid and a trace id.
 */
import assert from 'node:assert/strict';
import { traceAnnotation, traceIdOfUid } from '../../../server/trace/decision-trace.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-000000000012';
const ID = '0df28fbd5f5f4c1c9f5d000000000012';

describe('the trace id of a uid', () => {
  it("is a lower-case UUID's digits, and nothing for any other uid", () => {
    assert.equal(traceIdOfUid(UID), ID);
    assert.equal(traceIdOfUid(UID.toUpperCase()), undefined);
    assert.equal(traceIdOfUid('00000000-0000-0000-0000-000000000000'), undefined);
    assert.equal(traceIdOfUid('not-a-uuid'), undefined);
    assert.equal(traceIdOfUid('0df28fbd_5f5f-4c1c-9f5d-000000000012'), undefined);
    assert.equal(traceIdOfUid(UID), ID, 'the same when asked again');
  });

  it('is the same whatever uid was asked about last', () => {
    const cases: Array<[string, string, boolean]> = [
      [ID, UID, true],
      [ID.replace(/2$/, '3'), UID, false],
      [ID.toUpperCase(), UID.toUpperCase(), false],
      ['0'.repeat(32), '00000000-0000-0000-0000-000000000000', false],
      [ID, '0df28fbd_5f5f-4c1c-9f5d-000000000012', false],
      ['4bf92f3577b34da6a3ce929d0e0e4736', UID, false],
    ];
    for (const before of [undefined, UID, 'other', UID.toUpperCase()]) {
      for (const [traceId, uid, expected] of cases) {
        if (before !== undefined) traceIdOfUid(before);
        assert.equal(traceIdOfUid(uid) === traceId, expected, `${traceId} of ${uid}, after ${before}`);
      }
    }
  });

  it('gives the decision-trace annotation of its uid and trace id, whatever was asked last', () => {
    const other = '4bf92f3577b34da6a3ce929d0e0e4736';
    const asked: Array<[string, string]> = [
      [UID, ID],
      [UID, other],
      ['not-a-uuid', other],
      ['not-a-uuid', ID],
      [UID, ID],
    ];
    for (const [before, beforeId] of asked) {
      for (const [uid, traceId] of asked) {
        traceAnnotation(before, beforeId);
        assert.equal(traceAnnotation(uid, traceId), `uid=${uid} traceId=${traceId}`);
      }
    }
  });
});
