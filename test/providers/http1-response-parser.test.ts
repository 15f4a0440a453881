/**
 * ResponseParser on exact bytes: every framing, fed whole and split at every possible byte boundary,
 * gives the same status, headers, body and reusability; a long head, long lines or a long body fed one
 * byte at a time cost work and memory linear in them; malformed answers fail with a message naming what
 * is wrong.
 */
import assert from 'node:assert/strict';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HttpProtocolError, ResponseParser } from '../../server/providers/http1-response-parser.js';

interface Parsed {
  status: number | undefined;
  headers: Record<string, string> | undefined;
  body: string;
  done: boolean;
  keepAlive: boolean | undefined;
  trailing: number;
}

function parse(pieces: readonly string[], closed = false): Parsed {
  const parser = new ResponseParser();
  for (const piece of pieces) parser.push(Buffer.from(piece, 'latin1'));
  if (closed) parser.end();
  return {
    status: parser.head?.status,
    headers: parser.head ? { ...parser.head.headers } : undefined,
    body: parser.body().toString('latin1'),
    done: parser.done,
    keepAlive: parser.head?.keepAlive,
    trailing: parser.trailing,
  };
}

/** The wire split into two pieces at every offset, and into single bytes. */
function splits(wire: string): string[][] {
  const all: string[][] = [[wire], [...wire]];
  for (let i = 1; i < wire.length; i++) all.push([wire.slice(0, i), wire.slice(i)]);
  return all;
}

function protocolError(...pieces: string[]): string {
  try {
    parse(pieces);
  } catch (err) {
    if (err instanceof HttpProtocolError) return err.message;
    throw err;
  }
  return assert.fail('expected an HttpProtocolError');
}

/** Feeds `wire` one byte per push, as a hostile provider may send it. */
function pushBytes(parser: ResponseParser, wire: Buffer): void {
  for (let i = 0; i < wire.length; i++) parser.push(wire.subarray(i, i + 1));
}

/**
 * How many bytes `run` walks through the native primitives that copy and search bytes (Buffer.concat and
 * Buffer.from, copy(), set(), toString(), compare(), Buffer's and String's indexOf): each call counts the
 * range it covers (a search up to the end of its match), not one. That is what re-reading costs, whichever
 * primitive does it: re-copying the held bytes with concat (as the old parser did), copy() or set(), or
 * re-searching them from their start, adds up to the square of the input. Counting calls, or spying on
 * concat alone, would pass a parser that had merely changed primitive. What escapes is a JavaScript loop
 * over single bytes, the work these primitives exist to replace.
 */
function bytesWalked(run: () => void): number {
  let walked = 0;
  const restore: (() => void)[] = [];
  function spy<S, A extends unknown[], R>(
    target: object,
    name: string,
    cost: (self: S, args: A, result: R) => number,
  ): void {
    const original = Reflect.get(target, name) as (this: S, ...args: A) => R;
    const spied = Reflect.set(target, name, function (this: S, ...args: A): R {
      const result = original.apply(this, args);
      walked += cost(this, args, result);
      return result;
    });
    assert.ok(spied, `${name} cannot be spied on`);
    restore.push(() => Reflect.set(target, name, original));
  }
  const searched = (length: number, [needle, from]: unknown[], found: number): number => {
    const start = typeof from === 'number' ? (from < 0 ? Math.max(0, length + from) : from) : 0;
    const needleLength = typeof needle === 'string' || needle instanceof Uint8Array ? needle.length : 1;
    return Math.max(0, (found < 0 ? length : found + needleLength) - start);
  };
  const bufferMethods = Buffer.prototype as Buffer; // typed `any` by @types/node
  spy(Buffer, 'concat', (_self, _args, result: Buffer) => result.length);
  spy(Buffer, 'from', (_self, _args, result: Buffer) => result.length);
  spy(bufferMethods, 'indexOf', (self: Buffer, args: unknown[], found: number) => searched(self.length, args, found));
  spy(String.prototype, 'indexOf', (self: string, args: unknown[], found: number) =>
    searched(self.length, args, found),
  );
  spy(bufferMethods, 'compare', (self: Buffer, [, , , start, end]: unknown[]) => {
    return Number(end ?? self.length) - Number(start ?? 0);
  });
  spy(bufferMethods, 'copy', (_self, _args, copied: number) => copied);
  spy(Uint8Array.prototype, 'set', (_self, [source]: [ArrayLike<number>]) => source.length);
  spy(bufferMethods, 'toString', (_self, _args, text: string) => text.length);
  try {
    run();
  } finally {
    for (const undo of restore) undo();
  }
  return walked;
}

/** The heap in use once the garbage is collected (mocha runs without --expose-gc, hence the flag here). */
function heapUsed(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return getHeapStatistics().used_heap_size;
}

describe('ResponseParser', function () {
  describe('framing, whatever the packet boundaries', function () {
    const cases: { name: string; wire: string; expected: Parsed; closed?: boolean }[] = [
      {
        name: 'Content-Length',
        wire: 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"a":"bcd"}',
        expected: {
          status: 200,
          headers: { 'content-type': 'application/json', 'content-length': '11' },
          body: '{"a":"bcd"}',
          done: true,
          keepAlive: true,
          trailing: 0,
        },
      },
      {
        name: 'chunked, with a chunk extension and a trailer',
        wire: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\n{"a"\r\n7\r\n:"bcd"}\r\n0\r\nX-Sum: 1\r\n\r\n',
        expected: {
          status: 200,
          headers: { 'transfer-encoding': 'chunked' },
          body: '{"a":"bcd"}',
          done: true,
          keepAlive: true,
          trailing: 0,
        },
      },
      {
        name: 'delimited by the close (no length): done only at the end, never reused',
        wire: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end',
        closed: true,
        expected: {
          status: 200,
          headers: { 'content-type': 'text/plain' },
          body: 'until the end',
          done: true,
          keepAlive: false,
          trailing: 0,
        },
      },
      {
        name: 'an interim 100 Continue before the answer',
        wire: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n',
        expected: { status: 204, headers: { 'x-a': '1' }, body: '', done: true, keepAlive: true, trailing: 0 },
      },
      {
        name: 'repeated fields joined, names lower-cased, Connection: close',
        wire: 'HTTP/1.1 302 Found\r\nLocation: /a\r\nX-W: 1\r\nx-w: 2\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n',
        expected: {
          status: 302,
          headers: { location: '/a', 'x-w': '1, 2', connection: 'Close', 'content-length': '0' },
          body: '',
          done: true,
          keepAlive: false,
          trailing: 0,
        },
      },
    ];
    for (const c of cases) {
      it(`${c.name}`, function () {
        for (const pieces of splits(c.wire)) {
          assert.deepEqual(parse(pieces, c.closed), c.expected, `split as ${JSON.stringify(pieces.slice(0, 3))}…`);
          // A body delimited by the close is not complete until the close, however much has arrived.
          if (c.closed) assert.equal(parse(pieces, false).done, false, 'done before the close');
        }
      });
    }

    it('an answer not yet complete is not done, and a close does not complete a length-framed body', function () {
      const parser = new ResponseParser();
      parser.push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345'));

      assert.equal(parser.done, false);
      assert.equal(parser.bodyBytes, 5);
      assert.equal(parser.end(), false);
      assert.equal(parser.done, false);
    });

    it('counts bytes after the end of the answer (the connection must not be reused)', function () {
      assert.equal(parse(['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA']).trailing, 5);
    });

    it('HTTP/1.0 is reused only with Connection: keep-alive', function () {
      assert.equal(parse(['HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n']).keepAlive, false);
      assert.equal(parse(['HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n']).keepAlive, true);
    });

    it('Transfer-Encoding wins over Content-Length, and such a connection is not reused', function () {
      const parsed = parse([
        'HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n',
      ]);

      assert.equal(parsed.body, 'ok');
      assert.equal(parsed.done, true);
      assert.equal(parsed.keepAlive, false);
    });

    it('with keepBody false the body is counted, not kept', function () {
      const parser = new ResponseParser();
      parser.push(Buffer.from('HTTP/1.1 500 Oops\r\nContent-Length: 6\r\n\r\n'));
      parser.keepBody = false;
      parser.push(Buffer.from('failed'));

      assert.equal(parser.done, true);
      assert.equal(parser.bodyBytes, 6);
      assert.equal(parser.body().length, 0);
    });
  });

  describe('however a hostile provider splits its bytes, work and memory linear in them', function () {
    it('a long head fed one byte per push: each byte searched and copied a bounded number of times', function () {
      const fields = Array.from({ length: 600 }, (_, i) => `X-Field-${i}: ${'v'.repeat(90)}\r\n`).join('');
      const wire = Buffer.from(`HTTP/1.1 200 OK\r\n${fields}Content-Length: 2\r\n\r\nok`, 'latin1');
      const parser = new ResponseParser();

      const walked = bytesWalked(() => pushBytes(parser, wire));

      assert.equal(parser.done, true);
      assert.equal(Object.keys(parser.head!.headers).length, 601);
      assert.equal(parser.body().toString('latin1'), 'ok');
      // Re-reading the held head on every push would walk it once per push, not a few times in all.
      assert.ok(walked <= 10 * wire.length, `${walked} bytes walked for ${wire.length} fed`);
    });

    it('long chunk lines and trailer lines fed one byte per push: the same', function () {
      const chunks = Array.from({ length: 15 }, (_, i) => `1;ext=${'e'.repeat(4000)}\r\n${i % 10}\r\n`).join('');
      const trailers = Array.from({ length: 15 }, (_, i) => `X-Trailer-${i}: ${'t'.repeat(4000)}\r\n`).join('');
      const wire = Buffer.from(
        `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n${trailers}\r\n`,
        'latin1',
      );
      const parser = new ResponseParser();

      const walked = bytesWalked(() => pushBytes(parser, wire));

      assert.equal(parser.done, true);
      assert.equal(parser.body().toString('latin1'), '012345678901234');
      assert.ok(walked <= 10 * wire.length, `${walked} bytes walked for ${wire.length} fed`);
    });

    it('a body fed one byte per push is kept whole, not as one object per piece', function () {
      const body = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7) & 0xff));
      const wire = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body]);
      const parser = new ResponseParser();

      const before = heapUsed();
      pushBytes(parser, wire);
      const grown = heapUsed() - before;

      assert.equal(parser.done, true);
      assert.ok(parser.body().equals(body), 'the body as sent');
      // The heap rather than the parser's fields, so that pieces kept anywhere count; a Buffer object per
      // piece costs several times this bound.
      assert.ok(grown < 16 * body.length, `the heap grew by ${grown} bytes for ${body.length} pieces`);
    });

    it('a response fed one byte per push parses exactly as fed whole', function () {
      const fields = Array.from({ length: 50 }, (_, i) => `X-Field-${i}: value ${i}\r\n`).join('');
      const data = Array.from({ length: 40 }, (_, i) => 'abcdefghij'.repeat(4).slice(0, i + 1));
      const chunks = data.map((d, i) => `${d.length.toString(16)}${i % 3 ? `;n=${i}` : ''}\r\n${d}\r\n`).join('');
      const trailers = Array.from({ length: 20 }, (_, i) => `X-Trailer-${i}: ${i}\r\n`).join('');
      const wire =
        'HTTP/1.1 100 Continue\r\n\r\n' +
        `HTTP/1.1 200 OK\r\n${fields}Transfer-Encoding: chunked\r\n\r\n${chunks}0\r\n${trailers}\r\nEXTRA`;

      const whole = parse([wire]);

      assert.deepEqual(parse([...wire]), whole);
      assert.equal(whole.body, data.join(''));
      assert.equal(Object.keys(whole.headers!).length, 51);
      assert.equal(whole.done, true);
      assert.equal(whole.trailing, 5);
    });

    it('a head or line exactly at its limit is accepted, one byte longer refused, however it is split', function () {
      const start = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n';
      const limits: [string, (length: number) => string, number, string][] = [
        ['head', (n) => `${start}X: ${'h'.repeat(n - start.length - 3)}\r\n\r\n0\r\n\r\n`, 65536, 'response head'],
        ['chunk line', (n) => `${start}\r\n1;${'e'.repeat(n - 2)}\r\nx\r\n0\r\n\r\n`, 4096, 'chunk line'],
        ['trailer line', (n) => `${start}\r\n0\r\nX: ${'t'.repeat(n - 3)}\r\n\r\n`, 4096, 'chunk line'],
      ];
      for (const [name, wire, max, what] of limits) {
        assert.equal(parse([wire(max)]).done, true, `a ${name} at the limit, whole`);
        assert.equal(parse([...wire(max)]).done, true, `a ${name} at the limit, one byte per push`);
        assert.equal(protocolError(wire(max + 1)), `${what} over ${max} bytes`);
        assert.equal(protocolError(...wire(max + 1)), `${what} over ${max} bytes`);
      }
    });
  });

  describe('malformed answers', function () {
    const cases: [string, string, string][] = [
      ['a status line that is not HTTP/1.x', 'HTTP/2 200\r\n\r\n', 'invalid status line "HTTP/2 200"'],
      ['a status code that is not three digits', 'HTTP/1.1 20 OK\r\n\r\n', 'invalid status line "HTTP/1.1 20 OK"'],
      [
        'a space before the colon',
        'HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n',
        'invalid header line "Content-Length : 0"',
      ],
      ['obsolete line folding', 'HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n', 'invalid header line " folded"'],
      [
        'a Content-Length that is not a number',
        'HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n',
        'invalid Content-Length "ten"',
      ],
      [
        'two different Content-Lengths',
        'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n',
        'invalid Content-Length "5, 6"',
      ],
      [
        'a chunk size that is not hex',
        'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
        'invalid chunk size "zz"',
      ],
      [
        'chunk data not followed by CRLF',
        'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX',
        'chunk data not followed by CRLF',
      ],
      ['101 Switching Protocols', 'HTTP/1.1 101 Switching Protocols\r\n\r\n', 'unexpected 101 Switching Protocols'],
      [
        'an endless run of trailer fields',
        `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${`X-T: ${'t'.repeat(4000)}\r\n`.repeat(20)}`,
        'trailer section over 65536 bytes',
      ],
    ];
    for (const [name, wire, message] of cases) {
      it(`${name} → "${message}"`, function () {
        assert.equal(protocolError(wire), message);
      });
    }

    it('a head that never ends, fed one byte per push, is refused once it can no longer end within 64 KiB', function () {
      const parser = new ResponseParser();
      parser.push(Buffer.from('HTTP/1.1 200 OK\r\n'));
      let fed = 17;

      assert.throws(
        () => {
          while (fed < 70 * 1024) {
            fed++;
            parser.push(Buffer.from('a'));
          }
        },
        (err: unknown) => err instanceof HttpProtocolError && err.message === 'response head over 65536 bytes',
      );
      // Refused by the byte that makes the head certainly too long, or sooner: until then the last three
      // bytes could have begun the CRLFCRLF ending a head of exactly 64 KiB.
      assert.ok(fed <= 65536 + 4, `refused only at byte ${fed}`);
    });

    it('a head that never ends within 64 KiB', function () {
      const parser = new ResponseParser();
      parser.push(Buffer.from('HTTP/1.1 200 OK\r\n'));

      assert.throws(
        () => parser.push(Buffer.alloc(70 * 1024, 'a')),
        (err: unknown) => err instanceof HttpProtocolError && err.message === 'response head over 65536 bytes',
      );
    });
  });
});
