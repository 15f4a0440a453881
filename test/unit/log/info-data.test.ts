import assert from 'node:assert/strict';
import pino from 'pino';
import { createLogger } from '../../../server/base/log.js';

/** A destination that keeps each write. */
function captured(): { stream: pino.DestinationStream; lines: string[] } {
  const lines: string[] = [];
  return { stream: { write: (line: string) => void lines.push(line) }, lines };
}

/** The review line's fields as ReviewObserver makes them, for an ordinary review. */
const reviewFields = {
  uid: 'b3e1c0de-0000-4000-8000-000000002285',
  route: 'mutate',
  operation: 'CREATE',
  kind: 'v1/Pod',
  namespace: 'team-a',
  name: undefined,
  dryRun: false,
  allowed: true,
  patchOps: 3,
  ms: 0.063,
  steps: [
    { step: 'default-labels', outcome: 'patched', ms: 0.008 },
    { step: 'resource-defaults', outcome: 'patched', ms: 0.017, round: 1 },
  ],
};

/** What `info` and `infoData` write for the same fields, through loggers alike but for their destination. */
function bothLines(
  fields: object,
  { level = 'info', bindings }: { level?: 'info' | 'warn'; bindings?: object } = {},
): [string[], string[]] {
  const [viaInfo, viaData] = [captured(), captured()];
  const [a, b] = [createLogger(level, viaInfo.stream), createLogger(level, viaData.stream)];
  // A child is made from its parent with Object.create: it has infoData, which pino's types do not know of.
  const [loggerA, loggerB] = bindings ? [a.child(bindings), b.child(bindings) as typeof b] : [a, b];
  loggerA.info(fields, 'review');
  loggerB.infoData(fields, 'review');
  return [viaInfo.lines, viaData.lines];
}

describe('createLogger: infoData', () => {
  it("writes the review line byte for byte as pino's info does: level, time, service, fields in order, msg", () => {
    const [viaInfo, viaData] = bothLines(reviewFields);
    assert.equal(viaData.length, 1);
    // The time is the logger's cached ISO time: the two lines are written within the same millisecond or not.
    const untimed = (line: string) => line.replace(/"time":"[^"]+"/, '"time":"T"');
    assert.equal(untimed(viaData[0]!), untimed(viaInfo[0]!));
    assert.equal(
      untimed(viaData[0]!),
      '{"level":"info","time":"T","service":"admission-gateway","uid":"b3e1c0de-0000-4000-8000-000000002285",' +
        '"route":"mutate","operation":"CREATE","kind":"v1/Pod","namespace":"team-a","dryRun":false,"allowed":true,' +
        '"patchOps":3,"ms":0.063,"steps":[{"step":"default-labels","outcome":"patched","ms":0.008},' +
        '{"step":"resource-defaults","outcome":"patched","ms":0.017,"round":1}],"msg":"review"}\n',
    );
  });

  it("puts a child logger's bindings after the service, as pino does", () => {
    const [viaInfo, viaData] = bothLines({ uid: 'u-1' }, { bindings: { shadow: true } });
    const parsed = JSON.parse(viaData[0]!) as Record<string, unknown>;
    assert.deepEqual(Object.keys(parsed), ['level', 'time', 'service', 'shadow', 'uid', 'msg']);
    assert.deepEqual(parsed, { ...(JSON.parse(viaInfo[0]!) as object), time: parsed.time });
  });

  it('says the same as info of what a client chose: quotes, backslashes, control characters, long and non-ASCII text', () => {
    const hostile = {
      uid: 'a"b\\c\u0000d\u001fe\n',
      namespace: '\u2028\u2029 ünïcödé 名前 🐳',
      name: `${'x'.repeat(300)}"}`,
      message: 'denied: "quoted" \\ \t tab',
      steps: [],
    };
    const [viaInfo, viaData] = bothLines(hostile);
    const parsed = JSON.parse(viaData[0]!) as Record<string, unknown>;
    assert.equal(parsed.uid, hostile.uid);
    assert.equal(parsed.name, hostile.name);
    assert.deepEqual(parsed, { ...(JSON.parse(viaInfo[0]!) as object), time: parsed.time });
    assert.equal(viaData[0]!.indexOf('\n'), viaData[0]!.length - 1, 'one line, whatever the fields hold');
  });

  it("leaves what is not plain data to pino's serialiser: a cycle is logged, not thrown", () => {
    const cyclic: Record<string, unknown> = { uid: 'u-1' };
    cyclic.self = cyclic;
    const [viaInfo, viaData] = bothLines(cyclic);
    assert.equal(viaData.length, 1);
    const parsed = JSON.parse(viaData[0]!) as Record<string, unknown>;
    assert.deepEqual(parsed.self, { uid: 'u-1', self: '[Circular]' });
    assert.deepEqual(parsed, { ...(JSON.parse(viaInfo[0]!) as object), time: parsed.time });
  });

  it('writes nothing when info is off', () => {
    const [viaInfo, viaData] = bothLines(reviewFields, { level: 'warn' });
    assert.deepEqual(viaInfo, []);
    assert.deepEqual(viaData, []);
  });

  it("writes the fields through pino's own path to a multistream, which is told each line's level", () => {
    const { stream, lines } = captured();
    const log = createLogger('info', pino.multistream([{ level: 'info', stream }]));
    log.infoData({ uid: 'u-1' }, 'review');
    assert.equal(lines.length, 1);
    assert.deepEqual(
      { ...(JSON.parse(lines[0]!) as object), time: 'T' },
      { level: 'info', time: 'T', service: 'admission-gateway', uid: 'u-1', msg: 'review' },
    );
  });
});
