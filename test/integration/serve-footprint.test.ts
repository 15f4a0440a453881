/**
 * What `admission-gateway serve` loads without a cluster: the process holds every module it imports, so a
 * standalone gateway must not import the Kubernetes client (tens of MiB, for the cluster mode it does not
 * run), nor the OpenTelemetry SDK when tracing is off, nor the schema library of the OpenAPI document
 * nobody asked for. Run as a real process through server/main.ts, with the shipped gateway.yaml.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCertificates, writeCertificates } from '../../certs/generate.js';
import { serveArgs, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { importLogOptions, packagesIn } from '../helpers/loaded-packages.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'server', 'main.ts');

/** Packages only cluster mode, tracing or the OpenAPI document need. */
const NOT_FOR_STANDALONE = [
  '@kubernetes/client-node',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/sdk-trace-base',
  'typebox',
];

describe('admission-gateway serve without a cluster', function () {
  this.timeout(60_000);
  let dir: string;
  let gateway: GatewayProcess | undefined;

  beforeEach(async function () {
    dir = await mkdtemp(join(tmpdir(), 'gateway-footprint-'));
    await writeCertificates(
      join(dir, 'certs'),
      generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }),
    );
  });

  afterEach(async function () {
    gateway?.kill();
    gateway = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the shipped chain without loading the Kubernetes client, the tracing SDK or the schema library', async function () {
    const shipped = await readFile(join(ROOT, 'gateway.yaml'), 'utf8');
    const standalone = shipped.replace(/^( {2}enabled:) auto\b/m, '$1 false');
    assert.notEqual(standalone, shipped, 'gateway.yaml has no kube.enabled: auto to turn off');
    const config = join(dir, 'gateway.yaml');
    await writeFile(config, standalone);
    const log = join(dir, 'imports.log');
    gateway = await spawnGateway({
      command: process.execPath,
      args: [...importLogOptions(log), ...serveArgs(MAIN, config)],
      cwd: ROOT,
    });
    assert.equal((await fetch(`${gateway.health}/readyz`)).status, 200);

    const loaded = await packagesIn(log);
    // The log sees what serving loads: the HTTP framework of both servers is in it.
    assert.ok(loaded.includes('koa'), `koa not among the loaded packages: ${loaded.join(', ')}`);
    assert.deepEqual(
      loaded.filter((name) => NOT_FOR_STANDALONE.includes(name)),
      [],
    );
    assert.ok(
      gateway.logs().some((line) => line.msg === 'standalone mode (no cluster)'),
      gateway.stdout(),
    );
  });
});
