// A stand-in for kube-apiserver, for the `large` scenario's cluster-mode footprint (large.mjs part 0): enough for
// a gateway to run in cluster mode — every list answered empty, every watch held open without events — so that
// what it holds is measured with client-node loaded and its informers running, as in a pod. Plain HTTP on
// 127.0.0.1 (the kubeconfig skips TLS verification); it runs in the bench's own process.
/* global Buffer, URL */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

/** Starts the stand-in; resolves with { kubeconfigFile, requests(), close() }. The kubeconfig is written to `dir`. */
export async function startKubeStandIn(dir) {
  const seen = [];
  const open = new Set();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    seen.push(`${req.method} ${url.pathname}${url.searchParams.has('watch') ? ' (watch)' : ''}`);
    req.resume();
    res.setHeader('content-type', 'application/json');
    if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') {
      // Headers now, so that the informer counts the watch as started; no event ever follows.
      res.writeHead(200);
      res.flushHeaders();
      open.add(res);
      res.once('close', () => open.delete(res));
      return;
    }
    if (req.method !== 'GET') {
      res.writeHead(404);
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
      return;
    }
    res.end(JSON.stringify({ kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  const kubeconfigFile = path.join(dir, 'stand-in.kubeconfig');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'stand-in', cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'bench', user: { token: Buffer.from('bench').toString('hex') } }],
    contexts: [{ name: 'stand-in', context: { cluster: 'stand-in', user: 'bench' } }],
    'current-context': 'stand-in',
  };
  fs.writeFileSync(kubeconfigFile, JSON.stringify(kubeconfig));
  return {
    kubeconfigFile,
    /** `GET /api/v1/namespaces (watch)`, … in the order they came. */
    requests: () => [...seen],
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
