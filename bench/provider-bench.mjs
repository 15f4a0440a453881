// Shared by the provider micro-benchmarks (provider-call.mjs, hostile-head.mjs): the gateway's TypeScript
// sources loaded through tsx, a generated CA and serving certificate, a provider process pinned to its own
// core (a script that prints its port line, given the certificate and key files), and a provider client of it.
/* global process */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { portLine } from './lib.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Imports a module of the gateway by its path from the repository root. */
export const imp = (file) => import(pathToFileURL(path.resolve(ROOT, file)).href);

/**
 * Starts `node SCRIPT ...args(certFile, keyFile)` on `core` and a client of `clientFile` (a module exporting
 * createProviderClient) for it. Resolves with the client, its URL, a Pod review's request, and `stop()`
 * (also run at exit).
 */
export async function startProviderBench({ clientFile, core, script, args }) {
  const generate = await imp('certs/generate.ts');
  const { createProviderClient } = await import(pathToFileURL(path.resolve(clientFile)).href);
  const { ADMISSION_V1 } = await imp('server/admission/types.ts');
  const { podCreate, requestOf } = await imp('test/fixtures/reviews/index.ts');

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'provider-bench-'));
  const bundle = generate.generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const files = await generate.writeCertificates(path.join(tmp, 'certs'), bundle);
  const provider = spawn('taskset', ['-c', core, process.execPath, script, ...args(files.certFile, files.keyFile)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = () => {
    if (provider.exitCode === null) provider.kill('SIGTERM');
    rmSync(tmp, { recursive: true, force: true });
  };
  process.on('exit', stop);
  const url = `https://127.0.0.1:${await portLine(provider, 'provider')}/admit`;
  const client = createProviderClient({ url, ca: bundle.caCert, apiVersion: ADMISSION_V1 });
  return { client, url, request: requestOf(podCreate()), stop };
}
