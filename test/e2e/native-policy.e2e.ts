/**
 * Native admission policies in the gateway against the apiserver's own (README "Native admission policies"):
 * the same ValidatingAdmissionPolicies are created in the apiserver, bound to one namespace, and written to an
 * `admissionPolicies` entry's files, bound to the gateway's namespace; a seeded corpus of objects is created
 * (dry run) in both, and every answer must agree: the decision, the HTTP code, the refusal in the apiserver's
 * words and the warnings. On a cluster without ValidatingAdmissionPolicy (1.20) the same files enforce
 * through the gateway. A CEL library function of the gateway's made to answer wrongly (quantity's compareTo never
 * positive, isSorted skipping its first pair) makes the comparison fail, naming the objects.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { createNamespace, eventually, randomSuffix, requireKube, warningTexts } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { generateCorpus, type CorpusObject } from './native-corpus.js';
import { bindingsFor, paramsConfigMap, POLICIES } from './native-policy-set.js';
import { apiserverRequest } from './server-side-apply.js';

const SUITE = 'native-policy';
const SEED = 20261127;
const CORPUS_SIZE = 240;
const POLICY_START = "ValidatingAdmissionPolicy '";

const RULES = [
  { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'configmaps', 'services'] },
  { operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] },
];

/** What a client sees of one create. */
interface Answer {
  readonly code: number;
  /** The refusals in the policies' words (the gateway may report several, the apiserver one). */
  readonly refusals: readonly string[];
  readonly warnings: readonly string[];
}

async function createDryRun(object: CorpusObject, namespace: string): Promise<Answer> {
  const answer = await apiserverRequest('POST', `${object.collection.replace('<ns>', namespace)}?dryRun=All`, {
    body: JSON.stringify(object.body),
    contentType: 'application/json',
  });
  const message = (answer.body as { message?: string } | undefined)?.message ?? '';
  const at = message.indexOf(POLICY_START);
  const refusals = answer.status === 201 || at < 0 ? [] : message.slice(at).split(/; (?=ValidatingAdmissionPolicy ')/);
  if (answer.status !== 201 && at < 0) return { code: answer.status, refusals: [message], warnings: [] };
  return { code: answer.status, refusals, warnings: warningTexts(answer.headers).sort() };
}

async function createObject(apiPath: string, body: object): Promise<void> {
  const answer = await apiserverRequest('POST', apiPath, {
    body: JSON.stringify(body),
    contentType: 'application/json',
  });
  assert.equal(answer.status, 201, `POST ${apiPath}: ${answer.text}`);
}

/** Writes the policy set for the gateway's namespace into a folder of its own. */
async function policyFolder(namespace: string, paramsNamespace: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'native-policies-'));
  await writeFile(path.join(dir, 'policies.yaml'), POLICIES.map((p) => stringify(p)).join('---\n'));
  await writeFile(
    path.join(dir, 'bindings.yaml'),
    [...bindingsFor(namespace, paramsNamespace), paramsConfigMap(paramsNamespace)]
      .map((o) => stringify(o))
      .join('---\n'),
  );
  return dir;
}

const CHAIN = (dir: string) => `
- admissionPolicies: corpus
  files: [${dir}]
`;

/**
 * Probes that only an acting policy refuses: a ConfigMap holding a password, a Deployment over its params, a
 * Service on a privileged port — one per policy the corpus meets, since the apiserver's informers may make one
 * act later than another (a Service probe was missing, and early Services of the corpus met no policy).
 */
const PROBES: readonly CorpusObject[] = [
  {
    collection: '/api/v1/namespaces/<ns>/configmaps',
    body: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'probe', labels: { exempt: 'true' } },
      data: { a: 'password' },
    },
  },
  {
    collection: '/apis/apps/v1/namespaces/<ns>/deployments',
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'probe', labels: { exempt: 'true' } },
      spec: {
        replicas: 9,
        selector: { matchLabels: { probe: 'x' } },
        template: {
          metadata: { labels: { probe: 'x', exempt: 'true' } },
          spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.9' }] },
        },
      },
    },
  },
  {
    collection: '/api/v1/namespaces/<ns>/services',
    body: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'probe', labels: { exempt: 'true' } },
      spec: { ports: [{ name: 'ssh', port: 22 }] },
    },
  },
];

/** Starts a gateway whose files bind the policies to a fresh namespace of the suite; returns both. */
async function gatewayWithPolicies(
  paramsNamespace: string,
): Promise<{ gw: E2EGateway; namespace: string; folder: string }> {
  const namespace = await createNamespace(SUITE);
  const folder = await policyFolder(namespace, paramsNamespace);
  const gw = await startE2EGateway({
    suite: SUITE,
    chain: CHAIN(folder),
    validating: [{ name: 'validate', route: 'validate', rules: RULES }],
  });
  return { gw, namespace, folder };
}

async function createNamespaceNamed(prefix: string): Promise<string> {
  const name = `${prefix}-${randomSuffix()}`;
  await createObject('/api/v1/namespaces', { metadata: { name } });
  return name;
}

describe('native admission policies: the gateway and the apiserver agree on a generated corpus', function () {
  let gw: E2EGateway | undefined;
  let folder = '';
  let apiserverNamespace = '';
  let gatewayNamespace = '';
  const created: string[] = [];

  before(async function () {
    requireKube(this, 30, 'ValidatingAdmissionPolicy GA');
    this.timeout(180_000);
    const paramsNamespace = await createNamespaceNamed('native-params');
    apiserverNamespace = await createNamespaceNamed('native-apiserver');
    await createObject(`/api/v1/namespaces/${paramsNamespace}/configmaps`, paramsConfigMap(paramsNamespace));
    ({ gw, namespace: gatewayNamespace, folder } = await gatewayWithPolicies(paramsNamespace));
    const group = '/apis/admissionregistration.k8s.io/v1';
    for (const object of [...POLICIES, ...bindingsFor(apiserverNamespace, paramsNamespace)]) {
      const collection =
        object.kind === 'ValidatingAdmissionPolicy'
          ? 'validatingadmissionpolicies'
          : 'validatingadmissionpolicybindings';
      await createObject(`${group}/${collection}`, object);
      created.push(`${group}/${collection}/${(object as { metadata: { name: string } }).metadata.name}`);
    }
    // The apiserver loads policies, bindings and params through informers: wait until they act.
    await eventually('the native policies to act', async () => {
      const answers = await Promise.all(PROBES.map((probe) => createDryRun(probe, apiserverNamespace)));
      return answers.every((a) => a.refusals.some((r) => r.startsWith(POLICY_START))) ? true : undefined;
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it(`gives the same decision, code, refusal and warnings for each of ${CORPUS_SIZE} generated objects`, async function () {
    this.timeout(300_000);
    const corpus = generateCorpus(SEED, CORPUS_SIZE);
    const disagreements: object[] = [];
    const seen = {
      allowed: 0,
      denied: 0,
      warned: 0,
      oneRefusal: 0,
      severalRefusals: 0,
      failedExpressions: 0,
      failedExpressionsReported: 0,
    };
    for (const object of corpus) {
      const name = (object.body.metadata as { name: string }).name;
      const [native, gateway] = await Promise.all([
        createDryRun(object, apiserverNamespace),
        createDryRun(object, gatewayNamespace),
      ]);
      // Where several bindings refuse, the apiserver reports one (which one its map order decides), the
      // gateway all of them in policy and binding name order (README: known differences).
      const refusalAgrees =
        native.refusals.length === 0
          ? gateway.refusals.length === 0
          : native.refusals.length === 1 && gateway.refusals.includes(native.refusals[0]!);
      // The code is the reported refusal's: with several, the apiserver's may be another's than the gateway's first.
      const codeAgrees = gateway.refusals.length > 1 ? native.code !== 201 : native.code === gateway.code;
      if (!codeAgrees || !refusalAgrees || native.warnings.join('\n') !== gateway.warnings.join('\n'))
        disagreements.push({ name, kind: object.body.kind, native, gateway });
      if (native.code === 201) seen.allowed++;
      else seen.denied++;
      if (native.warnings.length > 0) seen.warned++;
      if (gateway.refusals.length > 1) seen.severalRefusals++;
      else if (gateway.refusals.length === 1) seen.oneRefusal++;
      if (gateway.refusals.some((r) => r.includes('resulted in error'))) seen.failedExpressions++;
      // Compared word for word only where the apiserver chose to report that refusal.
      if (native.refusals.some((r) => r.includes('resulted in error'))) seen.failedExpressionsReported++;
    }
    assert.deepEqual(disagreements, [], `${disagreements.length} disagreements`);
    // The corpus reaches every kind of answer, or agreeing would prove little.
    assert.ok(
      seen.allowed >= 20 && seen.oneRefusal >= 40 && seen.warned >= 3 && seen.failedExpressions >= 10,
      JSON.stringify(seen),
    );
    this.test!.title += ` (${JSON.stringify(seen)})`;
  });
});

describe('native admission policies where the apiserver has none: the same files enforce through the gateway', function () {
  let gw: E2EGateway | undefined;
  let folder = '';
  let namespace = '';
  let paramsNamespace = '';

  before(async function () {
    paramsNamespace = await createNamespaceNamed('native-params');
    ({ gw, namespace, folder } = await gatewayWithPolicies(paramsNamespace));
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('refuses with the refusal in the apiserver’s words and its reason’s code', async function () {
    const [configMap, deployment] = await Promise.all(PROBES.map((probe) => createDryRun(probe, namespace)));
    assert.deepEqual(configMap, {
      code: 422,
      refusals: [
        "ValidatingAdmissionPolicy 'corpus-configmaps' with binding 'corpus-configmaps' denied request: 1 keys hold a password",
      ],
      warnings: [],
    });
    assert.deepEqual(deployment, {
      code: 403,
      refusals: [
        "ValidatingAdmissionPolicy 'corpus-replicas' with binding 'corpus-replicas' denied request: 9 replicas, over the limit of 5",
      ],
      warnings: [],
    });
  });

  it('warns for a Warn binding and lets the object through', async function () {
    const pod: CorpusObject = {
      collection: '/api/v1/namespaces/<ns>/pods',
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'canary', labels: { app: 'web', team: 'payments', tier: 'canary' } },
        spec: {
          hostNetwork: true,
          containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.9', resources: { limits: { memory: '64Mi' } } }],
        },
      },
    };
    assert.deepEqual(await createDryRun(pod, namespace), {
      code: 201,
      refusals: [],
      warnings: [
        "Validation failed for ValidatingAdmissionPolicy 'corpus-security' with binding 'corpus-security-warn': containers may run as root: c",
        "Validation failed for ValidatingAdmissionPolicy 'corpus-security' with binding 'corpus-security-warn': privileged containers and the host network are not allowed",
      ],
    });
  });
});
