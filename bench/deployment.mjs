// What the shipped Deployment (manifests/deployment.yaml) sets for the gateway's container, read by the benchmarks
// that run a gateway, or its review path, as a pod would; and a process run so (runAsPod).
/* global process */
import { spawnSync } from 'node:child_process';
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

/** Whether processes can be pinned to a core (Linux, with taskset). */
let canPin;

/**
 * Runs `node script ...args` in a process of its own as the Deployment's container would (its NODE_OPTIONS, read
 * from the checkout at `root`), pinned to core 0 when taskset is there, and returns its last line of output as
 * JSON. A process that fails throws, with its first error line (`label` says which run it was).
 */
export function runAsPod(root, script, args, label) {
  canPin ??= process.platform === 'linux' && spawnSync('taskset', ['-V']).status === 0;
  const argv = [process.execPath, script, ...args];
  const [command, ...rest] = canPin ? ['taskset', '-c', '0', ...argv] : argv;
  const env = { ...process.env, NODE_OPTIONS: deploymentNodeOptions(root) };
  const done = spawnSync(command, rest, { encoding: 'utf8', env });
  if (done.status !== 0) {
    const lines = done.stderr.trim().split('\n');
    throw new Error(`${label}: ${lines.find((line) => /Error/.test(line)) ?? lines.pop()}`);
  }
  return JSON.parse(done.stdout.trim().split('\n').pop());
}
