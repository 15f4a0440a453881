// Gateways run as processes of their own for the bench's side scripts (setting-cost.mjs, shed-bodies.mjs): each
// as the Deployment's container runs it (its NODE_OPTIONS), pinned to a core, on ports of its own on 127.0.0.1,
// with certificates made for the run, its log in a file that is emptied every 2 s (the lines are written, as a
// serving gateway writes them, but not kept). Everything started is stopped, and the temporary folder removed, when
// the script exits. Uses dist/ (npm run build first).
/* global process, console, fetch, setInterval, clearInterval */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import YAML from 'yaml';
import { deploymentNodeOptions } from './deployment.mjs';

/** A port free on 127.0.0.1 now (the gateway may log nothing at start, so its ports are chosen here). */
async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * The gateways of one script run from the checkout at `root`: `certs` (the CA's file is `caCertFile`), and
 * `start(name, config, { core })`, which runs the GatewayConfig `config` (its `server` given the ports, the
 * certificate and a short shutdown here) and resolves once it is ready with { pid, port, opsUrl, stop() }.
 */
export async function benchGateways(root, name) {
  if (!fs.existsSync(path.join(root, 'dist/server/main.js'))) {
    console.error('no dist/ (npm run build first)');
    process.exit(2);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `admission-gateway-${name}-`));
  const running = new Set();
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  process.on('SIGINT', () => process.exit(130));
  const generate = await import(pathToFileURL(path.join(root, 'dist/certs/generate.js')).href);
  const certs = await generate.writeCertificates(
    path.join(tmp, 'certs'),
    generate.generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }),
  );
  let started = 0;

  async function start(label, config, { core = 0 } = {}) {
    const n = started++;
    const [port, opsPort, healthPort] = [await freePort(), await freePort(), await freePort()];
    const configFile = path.join(tmp, `gateway-${n}.yaml`);
    const server = {
      ...config.server,
      host: '127.0.0.1',
      port,
      opsHost: '127.0.0.1',
      opsPort,
      healthHost: '127.0.0.1',
      healthPort,
      tls: { certFile: certs.certFile, keyFile: certs.keyFile, generate: false },
      shutdownTimeoutSeconds: 1,
    };
    fs.writeFileSync(configFile, YAML.stringify({ ...config, server }));
    const logFile = path.join(tmp, `gateway-${n}.log`);
    const out = fs.openSync(logFile, 'a'); // O_APPEND: the file is truncated under the writer
    const child = spawn(
      'taskset',
      ['-c', String(core), process.execPath, 'dist/server/main.js', 'serve', '--config', configFile],
      {
        cwd: root,
        stdio: ['ignore', out, 'inherit'],
        env: { ...process.env, NODE_OPTIONS: deploymentNodeOptions(root) },
      },
    );
    fs.closeSync(out);
    running.add(child);
    const ready = () =>
      fetch(`http://127.0.0.1:${healthPort}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
    for (const deadline = Date.now() + 30_000; !(await ready()); await sleep(50)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`gateway (${label}) did not start`);
    }
    const truncate = setInterval(() => {
      try {
        fs.truncateSync(logFile, 0);
      } catch {
        // the temporary directory is being removed
      }
    }, 2000);
    return {
      pid: child.pid,
      port,
      opsUrl: `http://127.0.0.1:${opsPort}`,
      async stop() {
        clearInterval(truncate);
        child.kill('SIGTERM');
        if (child.exitCode === null) await once(child, 'exit');
        running.delete(child);
      },
    };
  }

  return { certs, start };
}

/**
 * Runs bench/loadgen.mjs with `cfg` on core `core` and resolves with what it prints (its last line, JSON); fails
 * when it exits otherwise than with 0.
 */
export async function loadgen(root, cfg, core = 1) {
  const child = spawn(
    'taskset',
    ['-c', String(core), process.execPath, path.join(root, 'bench/loadgen.mjs'), JSON.stringify(cfg)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let text = '';
  child.stdout.on('data', (chunk) => (text += chunk));
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(text.trim().split('\n').pop());
}
