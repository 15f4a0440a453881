/**
 * ResponseParser on exact bytes: every framing, fed whole and split at every possible byte boundary,
 * gives the same status, headers, body and reusability; malformed answers fail with a message naming
 * what is wrong.
 */
import assert from 'node:assert/strict';
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

function protocolError(wire: string): string {
  try {
    parse([wire]);
  } catch (err) {
    if (err instanceof HttpProtocolError) return err.message;
    throw err;
  }
  return assert.fail('expected an HttpProtocolError');
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
    ];
    for (const [name, wire, message] of cases) {
      it(`${name} → "${message}"`, function () {
        assert.equal(protocolError(wire), message);
      });
    }

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
