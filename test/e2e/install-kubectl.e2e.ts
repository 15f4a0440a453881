/**
 * The shipped manifests installed as the README says, with kubectl: `kubectl apply -k` of an overlay of
 * manifests/ made for this apiserver's version — with the autoscaling component from 1.23 (policy/v1
 * PodDisruptionBudget, autoscaling/v2 HorizontalPodAutoscaler, webhooks with matchConditions from 1.30; the
 * k8s-1.29 component before), with the k8s-1.20 component on 1.20 (policy/v1beta1, no matchConditions, the
 * namespaces labelled instead); each older version's component gives what `manifests --kube-version` renders. Every
 * object of the overlay is stored as written, and the webhook configurations are exactly what
 * `admission-gateway manifests --kube-version <this version>` renders for manifests/config.yaml. Everything
 * but the Namespace is removed again afterwards, webhooks first (a deleted namespace stays Terminating here,
 * and other files use it).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { plugins as shippedPlugins } from '../../plugins/index.js';
import { REPO_ROOT, runCliCaptured } from '../helpers/cli.js';
import { MANIFESTS_DIR, isRecord, objectId, type Wire } from '../helpers/manifest-files.js';
import { KUBECONFIG_ENV, RUN_DIR, kubeAtLeast, kubeVersion, skipBecause } from './cluster.js';
import { apiserverRequest, differences, objectPath, servedResource } from './server-side-apply.js';

const run = promisify(execFile);
const KUBECTL = path.join(RUN_DIR, 'kubectl');
const EXCLUDE_LABEL = 'admissiongateway.io/exclude';

async function kubectl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(KUBECTL, ['--kubeconfig', process.env[KUBECONFIG_ENV]!, ...args], {
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`kubectl ${args.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}`, { cause: err });
  }
}

const documents = (text: string): Wire[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter(isRecord);

/** The components this version takes, as the README says (autoscaling/v2 is served from 1.23). */
function components(): string[] {
  if (!kubeAtLeast(21)) return ['k8s-1.20'];
  return [...(kubeAtLeast(23) ? ['autoscaling'] : []), ...(kubeAtLeast(30) ? [] : ['k8s-1.29'])];
}

/** An overlay of manifests/ with `components`, written into `dir`; kustomize takes no absolute paths. */
async function overlay(dir: string, components: readonly string[]): Promise<void> {
  const relative = (to: string) => path.relative(dir, to);
  await writeFile(
    path.join(dir, 'kustomization.yaml'),
    `resources: [${relative(MANIFESTS_DIR)}]\ncomponents: [${components
      .map((c) => relative(path.join(MANIFESTS_DIR, c)))
      .join(', ')}]\n`,
  );
}

/** The webhooks of `admission-gateway manifests --kube-version <version>` for manifests/config.yaml. */
async function renderedWebhooks(version: string): Promise<unknown[]> {
  const { code, stdout, stderr } = await runCliCaptured(
    ['manifests', '--config', 'manifests/config.yaml', '--no-ca-bundle', '--kube-version', version, '-o', 'json'],
    { cwd: REPO_ROOT, plugins: shippedPlugins },
  );
  assert.equal(code, 0, stderr);
  return (JSON.parse(stdout) as { items: Wire[] }).items.map((o) => o.webhooks);
}

const webhooksOf = (objects: readonly Wire[]) =>
  objects.filter((o) => String(o.kind).endsWith('WebhookConfiguration')).map((o) => o.webhooks);

describe('kubectl apply -k of the shipped manifests, for this apiserver’s version', function () {
  this.timeout(180_000);
  let dir: string;
  let built: Wire[];
  let applied: { stdout: string; stderr: string };

  before(async function () {
    dir = await mkdtemp(path.join(tmpdir(), 'install-kubectl-'));
    await overlay(dir, components());
    if (!kubeAtLeast(21)) {
      // README: on 1.20 the namespaces the webhooks must never see are labelled before the install.
      await kubectl('label', 'namespace', 'kube-system', 'kube-node-lease', `${EXCLUDE_LABEL}=true`, '--overwrite');
    }
    built = documents((await kubectl('kustomize', dir)).stdout);
    applied = await kubectl('apply', '-k', dir);
  });

  after(async function () {
    if (!built) return;
    // Webhooks first, as the README's uninstall does; the Namespace stays.
    const order = (o: Wire) => (String(o.kind).endsWith('WebhookConfiguration') ? 0 : 1);
    for (const object of [...built].sort((a, b) => order(a) - order(b))) {
      if (object.kind === 'Namespace') continue;
      const resource = await servedResource(String(object.apiVersion), String(object.kind));
      if (resource) await apiserverRequest('DELETE', objectPath(object, resource));
    }
    await rm(dir, { recursive: true, force: true });
  });

  it('applies every object of the overlay', function () {
    const created = applied.stdout
      .trim()
      .split('\n')
      .map((line) => line.replace(/ (created|configured|unchanged)$/, ''));
    assert.equal(created.length, built.length, applied.stdout);
    assert.doesNotMatch(applied.stderr, /error|invalid|unknown field/i, applied.stderr);
  });

  it('holds the objects this version serves: the PodDisruptionBudget and HorizontalPodAutoscaler versions', function () {
    const ids = built.map(objectId);
    const pdb = kubeAtLeast(21) ? 'policy/v1' : 'policy/v1beta1';
    assert.ok(ids.includes(`${pdb} PodDisruptionBudget admission-gateway/admission-gateway`), ids.join('\n'));
    assert.equal(
      ids.includes('autoscaling/v2 HorizontalPodAutoscaler admission-gateway/admission-gateway'),
      kubeAtLeast(23),
      ids.join('\n'),
    );
  });

  it('has the apiserver store every object as written', async function () {
    const problems: string[] = [];
    for (const object of built) {
      const resource = await servedResource(String(object.apiVersion), String(object.kind));
      if (!resource) {
        problems.push(`${objectId(object)}: not served`);
        continue;
      }
      const read = await apiserverRequest('GET', objectPath(object, resource));
      if (read.status !== 200) problems.push(`${objectId(object)}: GET answered ${read.status}`);
      else problems.push(...differences(object, read.body).map((d) => `${objectId(object)}: ${d}`));
    }
    assert.deepEqual(problems, []);
  });

  it('installs the webhook configurations `manifests --kube-version` renders for this version', async function () {
    assert.deepEqual(webhooksOf(built), await renderedWebhooks(kubeVersion().join('.')));
    const conditions = webhooksOf(built).flatMap((w) => (w as Wire[]).map((x) => x.matchConditions !== undefined));
    assert.deepEqual(conditions, [kubeAtLeast(30), kubeAtLeast(30)], 'matchConditions from 1.30 only');
  });

  it('has a component for each older version that gives the webhooks `manifests --kube-version` renders for it', async function () {
    for (const [component, version] of [
      ['k8s-1.29', '1.29'],
      ['k8s-1.20', '1.20'],
    ] as const) {
      const other = await mkdtemp(path.join(tmpdir(), `install-kubectl-${component}-`));
      try {
        await overlay(other, [component]);
        const objects = documents((await kubectl('kustomize', other)).stdout);
        assert.deepEqual(webhooksOf(objects), await renderedWebhooks(version), component);
      } finally {
        await rm(other, { recursive: true, force: true });
      }
    }
  });
  it('takes the NetworkPolicy component with the overlay’s control-plane addresses, and refuses it without them', async function () {
    if (!kubeAtLeast(21))
      skipBecause(this, 'the policy selects the monitoring namespace by kubernetes.io/metadata.name, set from 1.21');
    const other = await mkdtemp(path.join(tmpdir(), 'install-kubectl-network-policy-'));
    try {
      const relative = (to: string) => path.relative(other, to);
      // README's overlay: the shipped manifests, the addresses in a local-config object, the component.
      await writeFile(
        path.join(other, 'kustomization.yaml'),
        `resources: [${relative(MANIFESTS_DIR)}, control-plane.yaml]\ncomponents: [${[
          ...components().map((c) => path.join(MANIFESTS_DIR, c)),
          path.join(MANIFESTS_DIR, 'network-policy'),
        ]
          .map(relative)
          .join(', ')}]\n`,
      );
      await writeFile(
        path.join(other, 'control-plane.yaml'),
        [
          'apiVersion: admissiongateway.io/v1alpha1',
          'kind: ControlPlaneAddresses',
          'metadata:',
          '  name: admission-gateway',
          "  annotations: { config.kubernetes.io/local-config: 'true' }",
          'from:',
          '  - ipBlock: { cidr: 127.0.0.1/32 }',
          '',
        ].join('\n'),
      );
      const objects = documents((await kubectl('kustomize', other)).stdout);
      assert.deepEqual(
        objects.filter((o) => o.kind === 'ControlPlaneAddresses'),
        [],
        'the local-config object is never applied',
      );
      const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
      assert.equal(policies.length, 1);
      const file = path.join(other, 'policy.json');
      await writeFile(file, JSON.stringify(policies[0]));
      // Server-side dry run: the apiserver validates and defaults it as it would store it.
      const stored = JSON.parse((await kubectl('create', '--dry-run=server', '-o', 'json', '-f', file)).stdout) as Wire;
      assert.deepEqual(
        differences(policies[0]!, stored),
        [],
        'the policy as rendered is what the apiserver would store',
      );
      const ingress = (stored.spec as { ingress: { from: unknown[]; ports: unknown[] }[] }).ingress;
      assert.deepEqual(
        ingress.map((rule) => [rule.from, rule.ports]),
        [
          [[{ ipBlock: { cidr: '127.0.0.1/32' } }], [{ protocol: 'TCP', port: 'webhook' }]],
          [
            [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
            [{ protocol: 'TCP', port: 'ops' }],
          ],
        ],
      );
      // Applied by hand without an overlay, the placeholder is no CIDR: the whole policy is refused.
      const refused = await kubectl(
        'create',
        '--dry-run=server',
        '-f',
        path.join(MANIFESTS_DIR, 'network-policy', 'network-policy.yaml'),
      ).then(
        () => 'created',
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      );
      assert.match(refused, /NetworkPolicy.*is invalid.*ipBlock\.cidr/s);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
