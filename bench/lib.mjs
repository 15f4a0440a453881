// Shared by the benchmark's orchestrator (run.mjs) and load generator (loadgen.mjs): a lean keep-alive
// HTTPS/1.1 client, the AdmissionReview request builder, /proc readings and histogram summaries.
//
// The client is deliberately minimal (one request in flight per connection, a pre-built request, a tiny
// response parser) so that the load generator costs as little CPU per request as possible and the
// measured limit is the server's, not the client's.
/* global Buffer, setTimeout, clearTimeout */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

/** The per-request uid is a fixed-width UUID-shaped string, so every request has the same length. */
export function uidFor(n) {
  const hex = n.toString(16).padStart(12, '0');
  return `b3e1c0de-0000-4000-8000-${hex.slice(-12)}`;
}

/**
 * Builds requests for one AdmissionReview fixture, sent compact (as the apiserver does) with a fresh uid
 * each time. Returns { bodyBytes, build(uid) → Buffer }.
 */
export function requestBuilder(fixtureFile, target) {
  return reviewRequestBuilder(JSON.parse(readFileSync(fixtureFile, 'utf8')), target);
}

/** The same for an AdmissionReview object (left unchanged), e.g. one built by the `large` scenario. */
export function reviewRequestBuilder(review, { host, path }) {
  const marker = '@@UID@@';
  const text = JSON.stringify({ ...review, request: { ...review.request, uid: marker } });
  const [before, after] = text.split(marker);
  const bodyBytes = Buffer.byteLength(before) + Buffer.byteLength(uidFor(0)) + Buffer.byteLength(after);
  const head =
    `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: kube-apiserver-admission\r\n` +
    `Accept: application/json, */*\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`;
  const prefix = Buffer.from(head + before, 'utf8');
  const suffix = Buffer.from(after, 'utf8');
  const total = prefix.length + Buffer.byteLength(uidFor(0)) + suffix.length;
  return {
    bodyBytes,
    build(uid) {
      const buf = Buffer.allocUnsafe(total);
      prefix.copy(buf, 0);
      const at = prefix.length + buf.write(uid, prefix.length, 'latin1');
      suffix.copy(buf, at);
      return buf;
    },
  };
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

/**
 * One keep-alive TLS connection with at most one request in flight. `send(buf, cb)` calls
 * cb(err, status, body) once. Reconnects lazily after a close.
 */
export class Connection {
  constructor({ host, port, ca, servername = 'localhost' }) {
    this.options = { host, port, ca, servername, noDelay: true };
    this.socket = null;
    this.buf = null;
    this.cb = null;
    this.closeAfter = false;
    // A body that does not fit in one read: its chunks until `need` bytes (head included) are in.
    this.parts = null;
    this.partBytes = 0;
    this.need = 0;
  }

  connect() {
    return new Promise((resolve, reject) => {
      const socket = tls.connect(this.options);
      socket.setNoDelay(true);
      const onError = (err) => reject(err);
      socket.once('error', onError);
      socket.once('secureConnect', () => {
        socket.off('error', onError);
        this.attach(socket);
        resolve(this);
      });
    });
  }

  attach(socket) {
    this.socket = socket;
    this.buf = null;
    this.parts = null;
    this.need = 0;
    this.closeAfter = false;
    socket.on('data', (chunk) => this.onData(chunk));
    const onGone = (err) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.buf = null;
      this.parts = null;
      this.need = 0;
      this.fail(err ?? new Error('connection closed'));
    };
    socket.on('error', onGone);
    socket.on('close', () => onGone(undefined));
  }

  fail(err) {
    const cb = this.cb;
    this.cb = null;
    if (cb) cb(err, 0, null);
  }

  send(buf, cb) {
    if (this.cb) throw new Error('Connection.send: a request is already in flight');
    if (!this.socket || this.closeAfter) {
      this.socket?.destroy();
      this.socket = null;
      this.connect().then(
        () => this.send(buf, cb),
        (err) => cb(err, 0, null),
      );
      return;
    }
    this.cb = cb;
    this.socket.write(buf);
  }

  onData(chunk) {
    if (this.need > 0) {
      // A large answer (the `large` scenario's are up to ~7 MB) arrives in ~16 KiB TLS records: joining them
      // once it is complete, instead of copying the growing buffer on every record, keeps the client's cost
      // linear (it shares a core with the load generator).
      this.parts.push(chunk);
      this.partBytes += chunk.length;
      if (this.partBytes < this.need) return;
      chunk = Buffer.concat(this.parts, this.partBytes);
      this.parts = null;
      this.need = 0;
    }
    this.buf = this.buf ? Buffer.concat([this.buf, chunk]) : chunk;
    const buf = this.buf;
    const headEnd = buf.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const head = buf.toString('latin1', 0, headEnd).toLowerCase();
    const status = Number(head.slice(9, 12));
    const start = headEnd + 4;
    let body;
    let rest;
    const length = /\r\ncontent-length:\s*(\d+)/.exec(head);
    if (length) {
      const end = start + Number(length[1]);
      if (buf.length < end) {
        this.parts = [buf];
        this.partBytes = buf.length;
        this.need = end;
        this.buf = null;
        return;
      }
      body = buf.subarray(start, end);
      rest = buf.subarray(end);
    } else if (/\r\ntransfer-encoding:\s*chunked/.test(head)) {
      const parts = [];
      let at = start;
      for (;;) {
        const lineEnd = buf.indexOf(CRLF, at);
        if (lineEnd < 0) return;
        const size = parseInt(buf.toString('latin1', at, lineEnd), 16);
        if (Number.isNaN(size)) return this.protocolError('bad chunk size');
        if (size === 0) {
          if (buf.length < lineEnd + 4) return; // no trailers expected: "0\r\n\r\n"
          rest = buf.subarray(lineEnd + 4);
          break;
        }
        if (buf.length < lineEnd + 2 + size + 2) return;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(parts);
    } else {
      return this.protocolError('response without content-length or chunked encoding');
    }
    this.buf = rest.length > 0 ? rest : null;
    if (/\r\nconnection:\s*close/.test(head)) this.closeAfter = true;
    const cb = this.cb;
    this.cb = null;
    if (cb) cb(null, status, body);
  }

  protocolError(message) {
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
    this.fail(new Error(message));
  }

  close() {
    this.socket?.destroy();
    this.socket = null;
  }

  /** Closes the connection and fails the request in flight, if any (close() leaves its callback uncalled). */
  abort(err = new Error('connection closed')) {
    this.close();
    this.fail(err);
  }
}

/**
 * Requests with one fixed body (a SubjectAccessReview has no per-request uid: the apiserver sends the same
 * bytes for the same question). Returns { bodyBytes, build() → Buffer }; every request is the same Buffer.
 */
export function fixedRequestBuilder(
  body,
  { host, path, userAgent = 'kube-apiserver/v1.20.0 (linux/amd64) kubernetes/af46c47' },
) {
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
  const head =
    `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ${userAgent}\r\n` +
    `Accept: application/json, */*\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\n\r\n`;
  const request = Buffer.concat([Buffer.from(head, 'latin1'), bytes]);
  return { bodyBytes: bytes.length, build: () => request };
}

export const SAR_V1 = 'authorization.k8s.io/v1';

/**
 * A v1 SubjectAccessReview as kube-apiserver v1.20's webhook authorizer sends it (compact, empty fields
 * omitted, `status: {allowed: false}` included), for alice in e2e:readers asking `resourceAttributes`.
 */
export function subjectAccessReview(resourceAttributes) {
  return {
    kind: 'SubjectAccessReview',
    apiVersion: SAR_V1,
    metadata: { creationTimestamp: null },
    spec: {
      resourceAttributes,
      user: 'alice',
      groups: ['e2e:readers', 'system:authenticated'],
      uid: '5f0c1f4e-9d2b-4c7a-8e51-3a6f2b9d7c10',
    },
    status: { allowed: false },
  };
}

/** The no-opinion answer to a v1 SubjectAccessReview, byte for byte as the gateway writes it. */
const SAR_NO_OPINION = Buffer.from(
  JSON.stringify({ apiVersion: SAR_V1, kind: 'SubjectAccessReview', status: { allowed: false } }),
);
const SAR_DENIED = Buffer.from('"status":{"allowed":false,"denied":true,"reason":"');

/**
 * How an answer is checked, by the name a scenario gives (`answer` in the load generator's config). Each is
 * a cheap byte comparison: the generator's CPU per request must stay well below the server's.
 *   admissionAllowed — an AdmissionReview, allowed, with the request's uid (every admission scenario);
 *   sarNoOpinion     — HTTP 200 with exactly the v1 no-opinion SubjectAccessReview;
 *   sarDenied        — HTTP 200 with a v1 SubjectAccessReview status that denies, with a reason.
 */
export const answerChecks = {
  admissionAllowed: answeredAllowed,
  sarNoOpinion: (status, body) => status === 200 && body !== null && body.equals(SAR_NO_OPINION),
  sarDenied: (status, body) => status === 200 && body !== null && body.includes(SAR_DENIED),
};

/** Does an answer look like the allowed AdmissionReview for this uid? (cheap byte searches) */
export function answeredAllowed(status, body, uid) {
  return status === 200 && body !== null && body.includes(uid) && body.includes('"allowed":true');
}

/**
 * Why an answer's patch does not add every one of `paths` (`add` or `replace` at exactly that pointer), or
 * undefined when it does. Decodes the whole answer, so it is only for scenarios whose answers must carry
 * particular changes, at rates where the load generator's CPU does not matter.
 */
export function patchLacks(body, paths) {
  let ops;
  try {
    const patch = JSON.parse(body.toString('utf8')).response?.patch;
    if (!patch) return 'the answer has no patch';
    ops = JSON.parse(Buffer.from(patch, 'base64').toString('utf8'));
  } catch (err) {
    return `the answer's patch cannot be read: ${err instanceof Error ? err.message : String(err)}`;
  }
  const added = new Set(ops.filter((op) => op.op === 'add' || op.op === 'replace').map((op) => op.path));
  const missing = paths.filter((p) => !added.has(p));
  return missing.length ? `the answer's patch lacks ${missing.join(', ')}` : undefined;
}

/** The kernel's clock ticks a second, which /proc/<pid>/stat counts CPU time in (readProc's `clockTicks`). */
export const clockTicks = () => Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** utime+stime of a process in µs, resident set, its peak, and the main thread's run-queue wait. */
export function readProc(pid, clockTicks = 100) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  let runDelayNs = 0;
  try {
    runDelayNs = Number(readFileSync(`/proc/${pid}/schedstat`, 'latin1').split(' ')[1] ?? 0);
  } catch {
    // schedstat needs CONFIG_SCHEDSTATS; absent → 0
  }
  return {
    cpuUs: (ticks * 1e6) / clockTicks,
    rssMiB: kib('VmRSS') / 1024,
    hwmMiB: kib('VmHWM') / 1024,
    runDelayUs: runDelayNs / 1000,
  };
}

/** A node:perf_hooks histogram (values in µs) as plain numbers in ms. */
export function summarize(histogram) {
  const ms = (v) => Math.round(v) / 1000;
  if (histogram.count === 0) return { count: 0, p50: null, p90: null, p99: null, p999: null, max: null, mean: null };
  return {
    count: histogram.count,
    p50: ms(histogram.percentile(50)),
    p90: ms(histogram.percentile(90)),
    p99: ms(histogram.percentile(99)),
    p999: ms(histogram.percentile(99.9)),
    max: ms(histogram.max),
    mean: ms(histogram.mean),
  };
}

/**
 * The port a bench server (`servers.mjs`) prints as its first line, `{"port": N}`. Rejects when the child
 * exits first or prints nothing within 10 s; `why()` adds what to show then (e.g. the tail of its stderr).
 */
export function portLine(child, name, why = () => '') {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${why()}`)), 10_000);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (!out.includes('\n')) return;
      clearTimeout(timer);
      resolve(JSON.parse(out.split('\n')[0]).port);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}): ${why()}`));
    });
  });
}
