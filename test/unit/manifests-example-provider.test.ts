/**
 * manifests/examples/provider/ as an operator gets it: the objects agree with each other (Service → Deployment
 * → the TLS Secret mount and the flags the container starts with; RBAC ↔ ServiceAccount ↔ the names the
 * provider registers and owns), the container's arguments are a command line the image runs and the CLI
 * accepts, and the RBAC is exactly what self-registration needs. The apiserver's own verdict on the files is
 * test/e2e/install-manifests.e2e.ts; test/e2e/provider-sdk.e2e.ts registers with this very RBAC.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Container,
  V1Deployment,
  V1Service,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { availablePlugins } from '../../plugins/index.js';
import { compileSelector } from '../../server/steps/label-selector.js';
import { servedPlugins } from '../../server/commands/provider.js';
import { parseCommandLine, type Values } from '../../server/commands/usage.js';
import { parseConfigText } from '../../server/config/load.js';
import { parseDockerfile } from '../helpers/dockerfile.js';
import { REPO_ROOT } from '../helpers/cli.js';
import {
  MANIFESTS_DIR,
  kustomizationDocuments,
  readKustomization,
  type ManifestDocument,
} from '../helpers/manifest-files.js';

const DIR = 'examples/provider';

function one<T>(docs: readonly ManifestDocument[], kind: string): T {
  const found = docs.filter((d) => d.object.kind === kind);
  assert.equal(found.length, 1, `expected exactly one ${kind}, found ${found.length}`);
  return found[0]!.object as T;
}

describe('manifests/examples/provider/ (a provider Deployment registering itself)', function () {
  let docs: ManifestDocument[];
  let deployment: V1Deployment;
  let container: V1Container;
  let service: V1Service;
  let account: V1ServiceAccount;
  let values: Values;

  before(async function () {
    docs = await kustomizationDocuments(DIR);
    deployment = one<V1Deployment>(docs, 'Deployment');
    container = deployment.spec!.template.spec!.containers[0]!;
    service = one<V1Service>(docs, 'Service');
    account = one<V1ServiceAccount>(docs, 'ServiceAccount');
    const [script, ...argv] = container.args!;
    assert.equal(script, 'dist/server/main.js');
    const parsed = parseCommandLine(argv);
    assert.equal(parsed.command, 'provider');
    assert.deepEqual(parsed.args, []);
    values = parsed.values;
  });

  it('is its own kustomization of exactly these kinds, outside `kubectl apply -k manifests/`', async function () {
    assert.equal((await readKustomization(DIR)).kind, 'Kustomization');
    assert.deepEqual(docs.map((d) => d.object.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'Service',
      'ServiceAccount',
    ]);
    const root = await kustomizationDocuments('');
    assert.ok(!root.some((d) => d.file.startsWith('examples/')), 'the install does not include the example');
  });

  it('renders with kubectl kustomize to exactly these objects (skipped without kubectl)', async function () {
    this.timeout(60_000);
    const run = promisify(execFile);
    try {
      await run('kubectl', ['version', '--client'], { timeout: 30_000 });
    } catch {
      this.skip();
    }
    const { stdout } = await run('kubectl', ['kustomize', path.join(MANIFESTS_DIR, DIR)], { timeout: 50_000 });
    const rendered = parseAllDocuments(stdout).map((d) => d.toJS() as unknown);
    const byKind = (objects: unknown[]) =>
      [...objects].sort((a, b) => String((a as { kind: string }).kind).localeCompare((b as { kind: string }).kind));
    assert.deepEqual(byKind(rendered), byKind(docs.map((d) => d.object)));
  });

  it('starts the provider command the way the image runs it: node, then the script its CMD names', async function () {
    const stages = parseDockerfile(await readFile(path.join(REPO_ROOT, 'Dockerfile'), 'utf8'));
    const runtime = stages.at(-1)!;
    assert.match(runtime.image, /distroless\/nodejs/, 'the entrypoint is node, so args replace only CMD');
    const cmd = runtime.instructions.find((i) => i.keyword === 'CMD')!;
    const [script] = JSON.parse(cmd.args) as string[];
    assert.equal(container.args![0], script);
    assert.equal(container.command, undefined, 'the image’s entrypoint (node) stays');
  });

  it('serves a shipped plugin with settings the plugin accepts', function () {
    const { served: plugins } = servedPlugins(parseConfigText('{}', 'none', '/'), values, availablePlugins);
    assert.deepEqual(
      plugins.map((p) => p.plugin.name),
      ['default-labels'],
    );
    for (const { plugin, settings } of plugins) assert.doesNotThrow(() => plugin.settings?.(settings));
  });

  it('listens on the container port the Service targets, with the certificate, key and CA of the mounted Secret', function () {
    const pod = deployment.spec!.template.spec!;
    assert.ok(compileSelector({ matchLabels: service.spec!.selector! })(deployment.spec!.template.metadata!.labels!));
    const [port] = service.spec!.ports!;
    const containerPort = container.ports!.find((p) => p.name === port!.targetPort);
    assert.equal(Number(values.port), containerPort?.containerPort);
    const mount = container.volumeMounts!.find((m) => m.mountPath === path.posix.dirname(values['tls-cert']!));
    assert.equal(mount?.readOnly, true);
    for (const flag of ['tls-cert', 'tls-key', 'ca-file'] as const) {
      assert.equal(path.posix.dirname(values[flag]!), mount.mountPath, `--${flag} is in the mount`);
    }
    const volume = pod.volumes!.find((v) => v.name === mount.name);
    assert.ok(volume?.secret?.secretName, 'the certificate comes from a Secret');
  });

  it('registers by its Service, in the namespace the downward API gives, owned by its ClusterRoleBinding', function () {
    assert.equal(values.register, true);
    assert.equal(values.service, service.metadata!.name, 'NAME only: the namespace comes from POD_NAMESPACE');
    assert.deepEqual(container.env!.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom?.fieldRef, {
      fieldPath: 'metadata.namespace',
    });
    assert.equal(service.spec!.ports![0]!.port, 443, '--service without a port means 443');
    const binding = one<V1ClusterRoleBinding>(docs, 'ClusterRoleBinding');
    assert.equal(values['owner-clusterrolebinding'], binding.metadata!.name);
    assert.equal(values['failure-policy'], 'Ignore', 'a provider that is down must not block writes');
  });

  it('grants exactly what registration needs: get, create, patch of its own AdmissionProvider and get of its owner', function () {
    const binding = one<V1ClusterRoleBinding>(docs, 'ClusterRoleBinding');
    const role = one<V1ClusterRole>(docs, 'ClusterRole');
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: role.metadata!.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: account.metadata!.name, namespace: account.metadata!.namespace },
    ]);
    assert.equal(deployment.spec!.template.spec!.serviceAccountName, account.metadata!.name);
    assert.equal(deployment.metadata!.namespace, account.metadata!.namespace);
    const providerName = values['provider-name'] ?? values.service;
    assert.deepEqual(role.rules, [
      {
        apiGroups: ['admissiongateway.io'],
        resources: ['admissionproviders'],
        resourceNames: [providerName],
        verbs: ['get', 'create', 'patch'],
      },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterrolebindings'],
        resourceNames: [binding.metadata!.name],
        verbs: ['get'],
      },
    ]);
  });

  it('runs as a non-root user on a read-only root filesystem, probed on /healthz over HTTPS', function () {
    const pod = deployment.spec!.template.spec!;
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    for (const probe of [container.readinessProbe, container.livenessProbe]) {
      assert.deepEqual(probe?.httpGet, { path: '/healthz', port: 'https', scheme: 'HTTPS' });
    }
    assert.ok(container.resources?.requests?.memory && container.resources.limits?.memory);
  });
});
