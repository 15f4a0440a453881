/**
 * The files a configuration names, by field, as they were resolved: relative paths in gateway.yaml resolve
 * against its folder (against the working directory for the embedded default), which `serve` logs at start
 * so nobody has to work out which folder a relative path meant.
 */
import type { GatewayConfig } from './types.js';

/** Field path → absolute path, for every file the config names (unset ones left out). */
export function configFilePaths(config: GatewayConfig): Record<string, string> {
  const { tls } = config.server;
  const named: Array<[string, string]> = [
    ['server.tls.certFile', tls.certFile],
    ['server.tls.keyFile', tls.keyFile],
    ['server.tls.clientCAFile', tls.clientCAFile],
    ['kube.kubeconfig', config.kube.kubeconfig],
    ['record.path', config.record.path],
    ...config.chain.flatMap((entry): Array<[string, string]> =>
      entry.kind === 'provider' && entry.clientCert
        ? [
            [`${entry.path}.clientCert.certFile`, entry.clientCert.certFile],
            [`${entry.path}.clientCert.keyFile`, entry.clientCert.keyFile],
          ]
        : [],
    ),
  ];
  return Object.fromEntries(named.filter(([, file]) => file !== ''));
}
