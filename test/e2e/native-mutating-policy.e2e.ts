/**
 * MutatingAdmissionPolicies in the gateway against the apiserver's own (README "Native admission policies"): the
 * same policies are created in the apiserver, bound to one namespace, and written to an `admissionPolicies`
 * entry's files, bound to the gateway's namespace; a seeded corpus of objects is created in both, and every
 * answer must agree: the HTTP code, the refusal in the apiserver's words, and the object as stored. On a cluster
 * without MutatingAdmissionPolicy (1.20) the same files mutate through the gateway.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { createNamespace, eventually, kubeAtLeast, randomSuffix, requireKube } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { generateCorpus, type CorpusObject } from './native-corpus.js';
import { mutatingBindingsFor, mutatingPolicies } from './native-mutating-policy-set.js';
import { paramsConfigMap } from './native-policy-set.js';
import { apiserverRequest } from './server-side-apply.js';

const SUITE = 'native-mutating';
const SEED = 20261128;
const CORPUS_SIZE = 240;
/** Where a MutatingAdmissionPolicy's refusal starts, in the apiserver's answer and in the gateway's. */
const REFUSAL = /(?:^|: )(policy '.*)$/s;

const RULES = [
  { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'configmaps', 'services'] },
  { operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] },
];

/** What a client sees of one create: the code, and the object stored or the refusal. */
interface Answer {
  readonly code: number;
  readonly stored?: Record<string, unknown>;
  readonly refusal?: string;
}

/** The object as stored, without what differs between any two creates (identity, times, allocations). */
function comparable(body: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(body);
  const metadata = copy.metadata as Record<string, unknown>;
  for (const key of ['uid', 'resourceVersion', 'creationTimestamp', 'namespace', 'managedFields']) delete metadata[key];
  const spec = copy.spec as Record<string, unknown> | undefined;
  if (copy.kind === 'Service' && spec?.clusterIP !== 'None') {
    delete spec?.clusterIP;
    delete spec?.clusterIPs;
  }
  return copy;
}

async function create(object: CorpusObject, namespace: string, dryRun = false): Promise<Answer> {
  const collection = object.collection.replace('<ns>', namespace);
  const answer = await apiserverRequest('POST', dryRun ? `${collection}?dryRun=All` : collection, {
    body: JSON.stringify(object.body),
    contentType: 'application/json',
  });
  const body = answer.body as Record<string, unknown> | undefined;
  if (answer.status === 201 && body) return { code: 201, stored: comparable(body) };
  const message = typeof body?.message === 'string' ? body.message : answer.text;
  return { code: answer.status, refusal: REFUSAL.exec(message)?.[1] ?? message };
}

async function createObject(apiPath: string, body: object): Promise<void> {
  const answer = await apiserverRequest('POST', apiPath, {
    body: JSON.stringify(body),
    contentType: 'application/json',
  });
  assert.equal(answer.status, 201, `POST ${apiPath}: ${answer.text}`);
}

async function createNamespaceNamed(prefix: string): Promise<string> {
  const name = `${prefix}-${randomSuffix()}`;
  await createObject('/api/v1/namespaces', { metadata: { name } });
  return name;
}

/**
 * Writes the policies, the bindings for `namespace` and the params into a folder of its own: the policies as
 * v1beta1, the bindings as v1, so that the gateway reads both versions.
 */
async function policyFolder(namespace: string, paramsNamespace: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'native-mutating-'));
  const objects = [
    ...mutatingPolicies('v1beta1'),
    ...mutatingBindingsFor('v1', namespace, paramsNamespace),
    paramsConfigMap(paramsNamespace),
  ];
  await writeFile(path.join(dir, 'policies.yaml'), objects.map((o) => stringify(o)).join('---\n'));
  return dir;
}

async function gatewayWithPolicies(
  paramsNamespace: string,
): Promise<{ gw: E2EGateway; namespace: string; folder: string }> {
  const namespace = await createNamespace(SUITE);
  const folder = await policyFolder(namespace, paramsNamespace);
  const gw = await startE2EGateway({
    suite: SUITE,
    chain: `\n- admissionPolicies: corpus\n  files: [${folder}]\n`,
    mutating: [{ name: 'mutate', route: 'mutate', rules: RULES }],
  });
  return { gw, namespace, folder };
}

const pod = (name: string, labels: Record<string, string>, container: Record<string, unknown>): CorpusObject => ({
  collection: '/api/v1/namespaces/<ns>/pods',
  body: {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', ...container }] },
  },
});

/** One object per policy, each showing that policy acting (the apiserver's informers may make one act later). */
const PROBES = {
  labelled: pod('probe-latest', {}, { image: 'pause', resources: {} }),
  refused: pod('probe-stable', { tier: 'stable' }, { image: 'registry.k8s.io/pause:3.9', resources: {} }),
  noted: pod('probe-canary', { tier: 'canary' }, { image: 'registry.k8s.io/pause:3.9', resources: {} }),
  capped: {
    collection: '/apis/apps/v1/namespaces/<ns>/deployments',
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'probe', labels: { team: 'x' } },
      spec: {
        replicas: 9,
        selector: { matchLabels: { probe: 'x' } },
        template: {
          metadata: { labels: { probe: 'x' } },
          spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.9' }] },
        },
      },
    },
  },
  service: {
    collection: '/api/v1/namespaces/<ns>/services',
    body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'probe' }, spec: { ports: [{ port: 80 }] } },
  },
} satisfies Record<string, CorpusObject>;

/** Whether every policy acts on the probes created (dry run) in `namespace`. */
async function policiesAct(namespace: string): Promise<boolean> {
  const [labelled, refused, noted, capped, service] = await Promise.all(
    Object.values(PROBES).map((probe) => create(probe, namespace, true)),
  );
  const at = (answer: Answer | undefined, ...keys: string[]): unknown =>
    keys.reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], answer?.stored);
  const containers = at(labelled, 'spec', 'containers') as { imagePullPolicy?: string }[] | undefined;
  return (
    (at(labelled, 'metadata', 'labels') as Record<string, string> | undefined)?.team === 'platform' &&
    containers?.[0]?.imagePullPolicy === 'Always' &&
    refused?.code === 403 &&
    (refused.refusal ?? '').startsWith("policy 'corpus-memory-fail'") &&
    (at(noted, 'metadata', 'annotations') as Record<string, string> | undefined)?.['example.com/noted'] === 'yes' &&
    at(capped, 'spec', 'replicas') === 5 &&
    (at(service, 'metadata', 'annotations') as Record<string, string> | undefined)?.['example.com/ports'] === '80'
  );
}

describe('native mutating admission policies: the gateway and the apiserver store the same objects', function () {
  let gw: E2EGateway | undefined;
  let folder = '';
  let apiserverNamespace = '';
  let gatewayNamespace = '';
  const created: string[] = [];

  before(async function () {
    requireKube(this, 34, 'MutatingAdmissionPolicy');
    this.timeout(180_000);
    const version = kubeAtLeast(36) ? 'v1' : 'v1beta1';
    const paramsNamespace = await createNamespaceNamed('native-params');
    apiserverNamespace = await createNamespaceNamed('native-apiserver');
    await createObject(`/api/v1/namespaces/${paramsNamespace}/configmaps`, paramsConfigMap(paramsNamespace));
    ({ gw, namespace: gatewayNamespace, folder } = await gatewayWithPolicies(paramsNamespace));
    const group = `/apis/admissionregistration.k8s.io/${version}`;
    for (const object of [
      ...mutatingPolicies(version),
      ...mutatingBindingsFor(version, apiserverNamespace, paramsNamespace),
    ]) {
      const collection =
        object.kind === 'MutatingAdmissionPolicy' ? 'mutatingadmissionpolicies' : 'mutatingadmissionpolicybindings';
      await createObject(`${group}/${collection}`, object);
      created.push(`${group}/${collection}/${(object as { metadata: { name: string } }).metadata.name}`);
    }
    await eventually('the native mutating policies to act', async () =>
      (await policiesAct(apiserverNamespace)) ? true : undefined,
    );
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it(`gives the same code, refusal and stored object for each of ${CORPUS_SIZE} generated objects`, async function () {
    this.timeout(300_000);
    const corpus = generateCorpus(SEED, CORPUS_SIZE);
    const disagreements: object[] = [];
    const seen = { stored: 0, mutated: 0, refused: 0 };
    for (const object of corpus) {
      const [native, gateway] = await Promise.all([
        create(object, apiserverNamespace),
        create(object, gatewayNamespace),
      ]);
      if (JSON.stringify(native) !== JSON.stringify(gateway)) {
        const name = (object.body.metadata as { name: string }).name;
        disagreements.push({ name, kind: object.body.kind, native, gateway });
      }
      if (native.stored) {
        seen.stored++;
        // Mutated: the stored object carries something a policy wrote.
        if (/"team":"platform"|example\.com\/|"imagePullPolicy":"Always"/.test(JSON.stringify(native.stored)))
          seen.mutated++;
      } else seen.refused++;
    }
    assert.deepEqual(disagreements, [], `${disagreements.length} disagreements`);
    // The corpus reaches every kind of answer, or agreeing would prove little.
    assert.ok(seen.mutated >= 100 && seen.refused >= 5, JSON.stringify(seen));
    this.test!.title += ` (${JSON.stringify(seen)})`;
  });
});

describe('native mutating admission policies where the apiserver has none: the same files mutate through the gateway', function () {
  let gw: E2EGateway | undefined;
  let folder = '';
  let namespace = '';

  before(async function () {
    const paramsNamespace = await createNamespaceNamed('native-params');
    ({ gw, namespace, folder } = await gatewayWithPolicies(paramsNamespace));
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('stores a Pod as its policies mutate it: a label from params (JSONPatch), a container merged (ApplyConfiguration)', async function () {
    const answer = await create(PROBES.labelled, namespace);
    assert.equal(answer.code, 201, JSON.stringify(answer));
    const { metadata, spec } = answer.stored as { metadata: { labels?: object }; spec: { containers: object[] } };
    assert.deepEqual(metadata.labels, { team: 'platform' });
    assert.deepEqual(spec.containers, [
      {
        name: 'c',
        image: 'pause',
        imagePullPolicy: 'Always',
        resources: {},
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
      },
    ]);
  });

  it('caps a Deployment’s replicas at its params, and keeps the other mutation where one fails under Ignore', async function () {
    const capped = await create(PROBES.capped, namespace);
    assert.equal((capped.stored as { spec: { replicas: number } }).spec.replicas, 5);
    const noted = await create(PROBES.noted, namespace);
    assert.deepEqual((noted.stored as { metadata: { annotations?: object } }).metadata.annotations, {
      'example.com/noted': 'yes',
    });
  });

  it('refuses in the apiserver’s words when a mutation fails under Fail', async function () {
    assert.deepEqual(await create(PROBES.refused, namespace), {
      code: 403,
      refusal:
        "policy 'corpus-memory-fail' with binding 'corpus-memory-fail' denied request: expression 'Object{metadata: Object.metadata{annotations: {\"example.com/memory\": object.spec.containers[0].resources.limits.memory}}}' resulted in error: no such key: limits",
    });
  });
});
