// What the shipped Deployment (manifests/deployment.yaml) sets for the gateway's container, read by the benchmarks
// that run a gateway, or its review path, as a pod would.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

/** The gateway container of the Deployment in the checkout at `root`. */
function gatewayContainer(root) {
  const deployment = YAML.parse(readFileSync(path.join(root, 'manifests/deployment.yaml'), 'utf8'));
  return deployment?.spec?.template?.spec?.containers?.[0] ?? {};
}

/**
 * The NODE_OPTIONS the Deployment sets: its heap limit decides how far the heap grows before a major GC, so RSS
 * and collection figures are the ones a pod would show.
 */
export function deploymentNodeOptions(root) {
  return (gatewayContainer(root).env ?? []).find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
}

/** The Deployment's `resources.<kind>.memory` (`limits` or `requests`), as written. */
export function deploymentMemoryQuantity(root, kind) {
  return gatewayContainer(root).resources?.[kind]?.memory;
}
