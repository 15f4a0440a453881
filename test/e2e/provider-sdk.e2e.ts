import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { AuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { generateCertificates } from '../../certs/generate.js';
import { parseCommandLine } from '../../server/commands/usage.js';
import {
  PROVIDER_API_VERSION,
  PROVIDER_GROUP,
  PROVIDER_PLURAL,
  PROVIDER_VERSION,
  type AdmissionProvider,
  type AdmissionProviderStatus,
} from '../../server/kube/admission-provider.js';
import { DEFAULTS_FIELD_MANAGER, REGISTRATION_FIELD_MANAGER } from '../../server/provider-sdk/index.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { spawnLogged, type LoggedProcess } from '../helpers/gateway-process.js';
import { kustomizationDocuments, readDocuments, type Wire } from '../helpers/manifest-files.js';
import { core, eventually, kubeConfig, kubeConfigAs, randomSuffix, warningTexts, type TestUser } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { getChain, postReview } from './http.js';
import { pausePod } from './objects.js';
import { deleteProviderCrd, ensureCrd } from './admission-providers.js';
import { apiserverRequest, servedResource, serverSideApply } from './server-side-apply.js';

// One plugin module, two ways to run it. The example provider of manifests/examples/provider/ — its command
// line, its RBAC — runs as its own process (`admission-gateway provider`, started here) with a token of the
// example's ServiceAccount, registers itself with a gateway in cluster mode and patches Pods; the same plugin
// compiled into a second gateway gives the same patch, byte for byte, and the same stored Pod. An operator's
// edits survive a restart of the provider; stopping it opens the breaker, and the AdmissionProvider says so.
const SUITE = 'provider-sdk';
const COMPILED_SUITE = 'provider-sdk-compiled';
const FIELD_MANAGER = 'admission-gateway-e2e';
const OPERATOR_MANAGER = 'e2e-operator';
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };
const PROVIDERS_PATH = `/apis/${PROVIDER_GROUP}/${PROVIDER_VERSION}/${PROVIDER_PLURAL}`;
const TLS_MOUNT = '/etc/admission-gateway/tls/';

interface ExampleProvider {
  /** The container's arguments after the script, `--flag=value` as the manifest writes them. */
  readonly args: readonly string[];
  /** metadata.name of the AdmissionProvider (the Service's name) and of the owner binding. */
  readonly name: string;
  readonly binding: string;
  readonly namespace: string;
  readonly account: string;
  /** What --settings gives the plugin: the labels it adds. */
  readonly labels: Record<string, string>;
  readonly rbac: Wire[];
}

async function exampleProvider(): Promise<ExampleProvider> {
  const docs = await kustomizationDocuments('examples/provider');
  const deployment = docs.find((d) => d.object.kind === 'Deployment')!.object as {
    metadata: { namespace: string };
    spec: { template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } };
  };
  const [, ...args] = deployment.spec.template.spec.containers[0]!.args;
  const { values } = parseCommandLine(args);
  const [settings] = values.settings ?? [];
  const { labels } = JSON.parse(settings!.slice(settings!.indexOf('=') + 1)) as { labels: Record<string, string> };
  return {
    args,
    name: values['provider-name'] ?? values.service!,
    binding: values['owner-clusterrolebinding']!,
    namespace: deployment.metadata.namespace,
    account: deployment.spec.template.spec.serviceAccountName,
    labels,
    rbac: docs.filter((d) => d.object.kind !== 'Deployment' && d.object.kind !== 'Service').map((d) => d.object),
  };
}

/** A port nothing listens on now (the provider binds it next; the window is the test's own). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The example's command line for this test: its flags, with the certificate files here, the port given,
 * and the URL it is reached at on this host instead of its Service (whose name does not resolve here).
 */
function commandLine(example: ExampleProvider, dir: string, port: number, kubeconfig: string): string[] {
  const args = example.args.flatMap((arg) => {
    if (arg.startsWith('--service=')) return [`--url=https://127.0.0.1:${port}`, `--provider-name=${example.name}`];
    if (arg.startsWith('--port=')) return [`--port=${port}`];
    return [arg.replace(TLS_MOUNT, `${dir}/`)];
  });
  return [path.join(REPO_ROOT, 'scripts/admission-gateway.mjs'), ...args, `--kubeconfig=${kubeconfig}`];
}

/** GET <provider>/registration with the provider's CA. */
function registrationOf(port: number, ca: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = https.get(`https://127.0.0.1:${port}/registration`, { ca, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.once('end', () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }),
      );
      res.once('error', reject);
    });
    req.once('error', reject);
  });
}

async function readProvider(name: string): Promise<AdmissionProvider & { metadata: Wire }> {
  const answer = await apiserverRequest('GET', `${PROVIDERS_PATH}/${name}`);
  if (answer.status !== 200) throw new Error(`GET AdmissionProvider ${name}: HTTP ${answer.status}: ${answer.text}`);
  return answer.body as AdmissionProvider & { metadata: Wire };
}

/** The top-level spec fields each field manager owns, by `<manager> <operation>`. */
function specOwners(object: { metadata: Wire }): Record<string, string[]> {
  const entries = (object.metadata.managedFields ?? []) as {
    manager: string;
    operation: string;
    fieldsV1?: Record<string, Record<string, unknown>>;
  }[];
  const owners: Record<string, string[]> = {};
  for (const e of entries) {
    const spec = Object.keys(e.fieldsV1?.['f:spec'] ?? {}).filter((k) => k.startsWith('f:'));
    if (spec.length > 0) owners[`${e.manager} ${e.operation}`] = spec.map((k) => k.slice(2)).sort();
  }
  return owners;
}

/** The status without the condition timestamps (checked to be times, then dropped). */
function comparable(status: AdmissionProviderStatus | undefined): unknown {
  return {
    ...status,
    conditions: status?.conditions?.map(({ lastTransitionTime, ...rest }) => {
      assert.ok(!Number.isNaN(Date.parse(lastTransitionTime)), lastTransitionTime);
      return rest;
    }),
  };
}

/** The status of a discovered provider in the chain, its breaker `breaker`. */
function discoveredStatus(generation: number, breaker: 'closed' | 'open'): unknown {
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    observedGeneration: generation,
  });
  return {
    observedGeneration: generation,
    conditions: [
      condition('Ready', 'True', 'InChain', 'the provider is part of the chain'),
      condition('Discovered', 'True', 'Discovered', '1 handler(s)'),
      breaker === 'open'
        ? condition('CircuitOpen', 'True', 'Open', 'calls fail fast through the failurePolicy')
        : condition('CircuitOpen', 'False', 'Closed', 'calls go to the provider'),
      condition('Deprecated', 'False', 'CurrentVersions', 'calls are made in admission.k8s.io/v1'),
    ],
    handlers: [
      {
        name: 'default-labels',
        phase: 'mutate',
        path: '/default-labels',
        admissionReviewVersion: 'admission.k8s.io/v1',
      },
    ],
    breaker,
    references: { namespaces: 0 },
  };
}

/** What a Pod stored in two namespaces should share: everything but where and when it was stored. */
function storedContent(pod: V1Pod): unknown {
  const { metadata, spec } = JSON.parse(JSON.stringify(pod)) as V1Pod;
  return { labels: metadata?.labels, annotations: metadata?.annotations, spec };
}

describe('the provider SDK: a plugin run as its own process registers itself (real kube-apiserver)', function () {
  this.timeout(120_000);
  let example: ExampleProvider;
  let dir: string;
  let ca: string;
  let port: number;
  let args: string[];
  let provider: LoggedProcess | undefined;
  let gw: E2EGateway | undefined;
  let compiled: E2EGateway | undefined;
  let crdCreated = false;
  let bindingUid: string;
  let account: TestUser;

  const startProvider = async () => {
    provider = await spawnLogged(
      { command: process.execPath, args, cwd: dir, env: { PATH: process.env.PATH, HOME: dir } },
      'provider serving',
    );
    return provider;
  };
  const stopProvider = async () => {
    provider!.child.kill('SIGTERM');
    const exit = await provider!.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, provider!.stderr());
    provider = undefined;
  };
  /** The provider's GET /registration once it says `registered`. */
  const registered = () =>
    eventually('the provider to be registered', async () => {
      const answer = await registrationOf(port, ca);
      return answer.status === 200 ? answer.body : undefined;
    });
  /** The spec fields the provider registers, as stored. */
  const ownSpec = () => ({
    url: `https://127.0.0.1:${port}`,
    caBundle: Buffer.from(ca).toString('base64'),
    discovery: true,
    phases: ['mutate'],
  });
  const applyForReal = async (object: Wire) => {
    const resource = await servedResource(String(object.apiVersion), String(object.kind));
    return serverSideApply(object, resource!, { dryRun: false, fieldManager: FIELD_MANAGER });
  };

  before(async function () {
    example = await exampleProvider();
    dir = await mkdtemp(path.join(os.tmpdir(), 'admission-gateway-e2e-provider-sdk-'));
    // The CRD and the gateway's namespace (where the example lives), as `kubectl apply -k manifests/` makes them.
    crdCreated = await ensureCrd();
    const [namespace] = await readDocuments('namespace.yaml');
    await applyForReal(namespace!.object);
    for (const object of example.rbac) await applyForReal(object);
    const binding = await apiserverRequest(
      'GET',
      `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${example.binding}`,
    );
    bindingUid = String((binding.body as { metadata: { uid: string } }).metadata.uid);

    // The ServiceAccount's own credentials: a token from the TokenRequest API (no controller-manager here to
    // make token Secrets), as a projected service account token would be in the Pod.
    const request = await core().createNamespacedServiceAccountToken({
      name: example.account,
      namespace: example.namespace,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    account = {
      name: `system:serviceaccount:${example.namespace}:${example.account}`,
      token: request.status!.token,
      uid: '',
      groups: ['system:serviceaccounts', `system:serviceaccounts:${example.namespace}`, 'system:authenticated'],
    };
    const kubeconfig = path.join(dir, 'kubeconfig');
    await writeFile(kubeconfig, kubeConfigAs(account).exportConfig());

    const certs = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    ca = certs.caCert;
    await Promise.all([
      writeFile(path.join(dir, 'tls.crt'), certs.cert),
      writeFile(path.join(dir, 'tls.key'), certs.key),
      writeFile(path.join(dir, 'ca.crt'), certs.caCert),
    ]);
    gw = await startE2EGateway({
      suite: SUITE,
      chain: '[]',
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 }, statusIntervalMs: 200 },
    });
    compiled = await startE2EGateway({
      suite: COMPILED_SUITE,
      chain: `- plugin: default-labels\n  settings: ${JSON.stringify({ labels: example.labels })}\n`,
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
    });
    // Chosen once the gateways listen: each binds ports the system picks, which could be this one if chosen before.
    port = await freePort();
    args = commandLine(example, dir, port, kubeconfig);
    await startProvider();
  });

  after(async function () {
    provider?.kill();
    const failed = anyFailed(this.test!.parent!);
    await gw?.close({ keepDir: failed });
    await compiled?.close({ keepDir: failed });
    await apiserverRequest('DELETE', `${PROVIDERS_PATH}/${example.name}`);
    for (const object of [...example.rbac].reverse()) {
      const resource = await servedResource(String(object.apiVersion), String(object.kind));
      const meta = object.metadata as { name: string; namespace?: string };
      const scope = meta.namespace ? `/namespaces/${meta.namespace}` : '';
      await apiserverRequest('DELETE', `${resource!.groupVersionPath}${scope}/${resource!.plural}/${meta.name}`);
    }
    if (crdCreated) await deleteProviderCrd();
    if (!failed && !process.env.E2E_KEEP) await rm(dir, { recursive: true, force: true });
  });

  it('registers itself with the example’s RBAC: its fields under its field manager, the defaults handed over, owned by the binding', async function () {
    const registration = await registered();
    const stored = await readProvider(example.name);
    // More than one attempt only while the apiserver's RBAC cache has not yet seen the new binding (403).
    assert.ok(Number(registration.attempts) >= 1);
    assert.deepEqual(registration, {
      state: 'registered',
      name: example.name,
      attempts: registration.attempts,
      uid: stored.metadata.uid,
      resourceVersion: registration.resourceVersion,
      created: true,
    });
    assert.deepEqual(stored.spec, {
      ...ownSpec(),
      order: 500,
      failurePolicy: 'Ignore',
      timeoutSeconds: 5,
    });
    assert.deepEqual(stored.metadata.ownerReferences, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        name: example.binding,
        uid: bindingUid,
      },
    ]);
    assert.deepEqual(specOwners(stored), {
      [`${REGISTRATION_FIELD_MANAGER} Apply`]: ['caBundle', 'discovery', 'phases', 'url'],
      [`${DEFAULTS_FIELD_MANAGER} Apply`]: ['failurePolicy', 'order', 'timeoutSeconds'],
    });
  });

  it('becomes Ready and discovered in the gateway’s chain, and a Pod is stored with the plugin’s labels', async function () {
    const resource = await eventually('the AdmissionProvider to be Ready and discovered', async () => {
      const read = await readProvider(example.name);
      assert.deepEqual(comparable(read.status), discoveredStatus(read.metadata.generation as number, 'closed'));
      return read;
    });
    assert.equal(resource.metadata.generation, 1);
    const chain = await getChain(gw!.gateway.opsUrl);
    assert.deepEqual(
      chain.mutate.filter((s) => s.source === 'provider').map((s) => [s.name, s.order, s.failurePolicy]),
      [[`default-labels.${example.name}`, 500, 'Ignore']],
    );
    const namespace = await gw!.namespace();
    const name = `web-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: pausePod(name, { app: 'web' }) });
    const pod = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(pod.metadata!.labels, { app: 'web', ...example.labels });
  });

  it('gives the patch the compiled-in plugin gives, byte for byte, and the same stored Pod', async function () {
    const review = podCreate();
    const [viaProvider, inProcess] = await Promise.all([
      postReview(gw!.gateway, gw!.dir, 'mutate', review),
      postReview(compiled!.gateway, compiled!.dir, 'mutate', review),
    ]);
    assert.equal(viaProvider.status, 200);
    assert.equal(inProcess.status, 200);
    assert.ok(inProcess.answer.response?.patch, 'the compiled-in plugin patches the Pod');
    assert.equal(viaProvider.answer.response?.patch, inProcess.answer.response.patch);

    const name = `same-${randomSuffix()}`;
    const body = pausePod(name, { app: 'same' }, { container: { resources: { limits: { cpu: '100m' } } } });
    const stored: V1Pod[] = [];
    for (const gateway of [gw!, compiled!]) {
      const namespace = await gateway.namespace();
      await core().createNamespacedPod({ namespace, body });
      stored.push(await core().readNamespacedPod({ name, namespace }));
    }
    assert.deepEqual(storedContent(stored[0]!), storedContent(stored[1]!));
    assert.deepEqual(stored[0]!.metadata!.labels, { app: 'same', ...example.labels });
  });

  it('may touch its own AdmissionProvider and owner binding only (SubjectAccessReviews for its ServiceAccount)', async function () {
    const authorization = kubeConfig().makeApiClient(AuthorizationV1Api);
    const may = async (verb: string, group: string, resource: string, name?: string, subresource?: string) => {
      const review = await authorization.createSubjectAccessReview({
        body: {
          spec: {
            user: account.name,
            groups: [...account.groups],
            resourceAttributes: {
              verb,
              group,
              resource,
              ...(name ? { name } : {}),
              ...(subresource ? { subresource } : {}),
            },
          },
        },
      });
      return review.status!.allowed;
    };
    const providers = ['admissiongateway.io', 'admissionproviders'] as const;
    const bindings = ['rbac.authorization.k8s.io', 'clusterrolebindings'] as const;
    const decisions = {
      getOwn: await may('get', ...providers, example.name),
      createOwn: await may('create', ...providers, example.name),
      patchOwn: await may('patch', ...providers, example.name),
      getBinding: await may('get', ...bindings, example.binding),
      createUnnamed: await may('create', ...providers),
      patchOther: await may('patch', ...providers, 'someone-else'),
      deleteOwn: await may('delete', ...providers, example.name),
      updateOwn: await may('update', ...providers, example.name),
      list: await may('list', ...providers),
      patchStatus: await may('patch', ...providers, example.name, 'status'),
      getOtherBinding: await may('get', ...bindings, 'admission-gateway'),
    };
    assert.deepEqual(decisions, {
      getOwn: true,
      createOwn: true,
      patchOwn: true,
      getBinding: true,
      createUnnamed: false,
      patchOther: false,
      deleteOwn: false,
      updateOwn: false,
      list: false,
      patchStatus: false,
      getOtherBinding: false,
    });
  });

  it('keeps an operator’s edits across a restart, and refuses the operator’s apply of a field the provider owns', async function () {
    // kubectl edit / patch: an Update of fields the provider set only as defaults, and one it never set.
    const edit = await apiserverRequest('PATCH', `${PROVIDERS_PATH}/${example.name}?fieldManager=${OPERATOR_MANAGER}`, {
      body: JSON.stringify({
        spec: { order: 7, timeoutSeconds: 3, circuitBreaker: { volumeThreshold: 2, resetTimeoutSeconds: 600 } },
      }),
      contentType: 'application/merge-patch+json',
    });
    assert.equal(edit.status, 200, edit.text);
    // A server-side apply of the provider's own field is a conflict naming its manager (no force).
    const conflict = await apiserverRequest(
      'PATCH',
      `${PROVIDERS_PATH}/${example.name}?fieldManager=${OPERATOR_MANAGER}-apply`,
      {
        body: JSON.stringify({
          apiVersion: PROVIDER_API_VERSION,
          kind: 'AdmissionProvider',
          metadata: { name: example.name },
          spec: { url: 'https://127.0.0.1:1' },
        }),
        contentType: 'application/apply-patch+yaml',
      },
    );
    assert.equal(conflict.status, 409, conflict.text);
    assert.match(
      String((conflict.body as { message: string }).message),
      new RegExp(`conflict with "${REGISTRATION_FIELD_MANAGER}".*\\.spec\\.url`),
    );

    await stopProvider();
    await startProvider();
    const registration = await registered();
    assert.equal(registration.created, false);
    const stored = await readProvider(example.name);
    assert.deepEqual(stored.spec, {
      ...ownSpec(),
      order: 7,
      failurePolicy: 'Ignore',
      timeoutSeconds: 3,
      circuitBreaker: { volumeThreshold: 2, resetTimeoutSeconds: 600 },
    });
    assert.deepEqual(specOwners(stored), {
      [`${REGISTRATION_FIELD_MANAGER} Apply`]: ['caBundle', 'discovery', 'phases', 'url'],
      [`${DEFAULTS_FIELD_MANAGER} Apply`]: ['failurePolicy'],
      [`${OPERATOR_MANAGER} Update`]: ['circuitBreaker', 'order', 'timeoutSeconds'],
    });
    await eventually('the gateway to run the provider at the operator’s order', async () => {
      const chain = await getChain(gw!.gateway.opsUrl);
      const step = chain.mutate.find((s) => s.source === 'provider');
      return step?.order === 7 ? true : undefined;
    });
  });

  it('opens the breaker once the provider stops, and the AdmissionProvider says so; Pods are stored unlabelled (Ignore)', async function () {
    await stopProvider();
    const namespace = await gw!.namespace();
    const step = `default-labels.${example.name}`;
    // Each Pod is one failed call; the breaker (volumeThreshold 2) opens within a few.
    const resource = await eventually('the breaker to open and the status to say so', async () => {
      const name = `down-${randomSuffix()}`;
      const { headers } = await core().createNamespacedPodWithHttpInfo({
        namespace,
        body: pausePod(name, { app: 'down' }),
      });
      const pod = await core().readNamespacedPod({ name, namespace });
      assert.deepEqual(pod.metadata!.labels, { app: 'down' }, 'stored without the provider’s labels');
      assert.ok(
        warningTexts(headers).some((w) => w.startsWith(`${step}: failed open (`)),
        warningTexts(headers).join('; '),
      );
      const read = await readProvider(example.name);
      assert.deepEqual(comparable(read.status), discoveredStatus(read.metadata.generation as number, 'open'));
      return read;
    });
    assert.equal(resource.status?.breaker, 'open');
    const chain = await getChain(gw!.gateway.opsUrl);
    assert.deepEqual(
      chain.providers
        .filter((p) => p.name === example.name)
        .map(({ name, breaker, ready }) => ({ name, breaker, ready })),
      [{ name: example.name, breaker: 'open', ready: true }],
    );
  });
});
