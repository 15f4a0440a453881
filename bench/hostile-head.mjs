// What a hostile provider's response head costs the gateway: calls through the real provider client to a
// raw TLS server (a child process pinned to another core) that answers each request with a head sent one
// byte per TLS record — one long header field (`--shape one`) or many short ones (`--shape many`), of
// `--bytes` in all, more than the client accepts — and reports this process's CPU (user+sys) per call and
// how each call ended. The first call also pays for the handshake and warm-up: read the later ones.
//
// usage: taskset -c 0 node --import tsx bench/hostile-head.mjs [--shape one|many] [--bytes 70000] [--calls 4]
//          [--client FILE] [--provider-core 1]
/* global process, console, setImmediate, AbortController */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ROOT, startProviderBench } from './provider-bench.mjs';

const { values: argv } = parseArgs({
  options: {
    shape: { type: 'string', default: 'one' },
    bytes: { type: 'string', default: '70000' },
    calls: { type: 'string', default: '4' },
    client: { type: 'string', default: path.join(ROOT, 'server/providers/provider-client.ts') },
    'provider-core': { type: 'string', default: '1' },
    serve: { type: 'string' },
  },
});

/** The head, status line included, up to (not including) the blank line. */
function hostileHead(shape, bytes) {
  let head = 'HTTP/1.1 200 OK\r\n';
  if (shape === 'one') return `${head}X-Long: ${'a'.repeat(bytes)}\r\n`;
  for (let i = 0; head.length < bytes; i++) head += `X-Field-${i}: ${'v'.repeat(90)}\r\n`;
  return head;
}

if (argv.serve) {
  // The child: `--serve CERT_FILE,KEY_FILE`.
  const [certFile, keyFile] = argv.serve.split(',');
  const wire = `${hostileHead(argv.shape, Number(argv.bytes))}Content-Length: 2\r\n\r\nok`;
  const server = tls.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (socket) => {
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', async (chunk) => {
      received += chunk.toString('latin1');
      if (!received.includes('\r\n\r\n')) return;
      received = '';
      for (let i = 0; i < wire.length && !socket.destroyed; i++) {
        await new Promise((resolve) => socket.write(wire[i], resolve));
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
  });
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
} else {
  const { client, request, stop } = await startProviderBench({
    clientFile: argv.client,
    core: argv['provider-core'],
    script: fileURLToPath(import.meta.url),
    args: (certFile, keyFile) => ['--serve', `${certFile},${keyFile}`, '--shape', argv.shape, '--bytes', argv.bytes],
  });
  for (let i = 0; i < Number(argv.calls); i++) {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    let outcome = 'answered';
    try {
      await client.call({
        request,
        object: request.object,
        mutating: true,
        timeoutMs: 60_000,
        signal: new AbortController().signal,
      });
    } catch (err) {
      outcome = `${err.reason}: ${err.message}`;
    }
    const cpu = process.cpuUsage(cpu0);
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    console.log(
      `call ${i + 1} (${argv.shape}, ${argv.bytes} bytes): ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms CPU, ` +
        `${wallMs.toFixed(0)} ms wall — ${outcome}`,
    );
  }
  await client.close();
  stop();
  process.exit(0);
}
