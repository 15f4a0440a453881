/**
 * `namespaceObject` against the apiserver's own: one ValidatingAdmissionPolicy that reads the namespace (its labels,
 * annotations, spec, status, creation time, and what it leaves out) is created in the apiserver, bound to one
 * namespace, and written to the files of a gateway in cluster mode, bound to another namespace with the same labels
 * and annotations; the same ConfigMaps are created (dry run) in both and every answer must agree. A second policy
 * on Namespaces themselves expects `namespaceObject` to be null, as the apiserver gives it. Then a `policy` entry and
 * a matchCondition of the gateway read the namespace too.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { SUITE_LABEL, eventually, randomSuffix, requireKube } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiserverRequest } from './server-side-apply.js';

const SUITE = 'namespace-object';
const SUFFIX = randomSuffix();
const POLICY = `namespace-object-${SUFFIX}`;
const NAMESPACES_POLICY = `namespace-object-null-${SUFFIX}`;
const REFUSAL_START = "ValidatingAdmissionPolicy '";

/** What both namespaces carry, read by the policies (and the label the suite's webhooks select). */
const NAMESPACE_LABELS = { 'max-keys': '2', tier: 'restricted', [SUITE_LABEL]: SUITE };
const NAMESPACE_ANNOTATIONS = { 'acme.io/owner': 'payments' };

const rule = (resources: string[]) => ({
  operations: ['CREATE'],
  apiGroups: [''],
  apiVersions: ['v1'],
  resources,
});

const POLICIES = [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: POLICY },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [rule(['configmaps'])] },
      variables: [{ name: 'keys', expression: 'size(object.?data.orValue({}))' }],
      validations: [
        {
          expression: "variables.keys <= int(namespaceObject.metadata.labels['max-keys'])",
          messageExpression:
            "'%d keys, over the namespace limit of %s'.format([variables.keys, namespaceObject.metadata.labels['max-keys']])",
        },
        {
          expression:
            "object.metadata.?labels[?'owner'].orValue(namespaceObject.metadata.annotations['acme.io/owner']) == namespaceObject.metadata.annotations['acme.io/owner']",
          messageExpression: "'the owner label must be ' + namespaceObject.metadata.annotations['acme.io/owner']",
          reason: 'Forbidden',
        },
        {
          expression: "namespaceObject.status.phase == 'Active' && namespaceObject.spec.finalizers == ['kubernetes']",
          message: 'the namespace is not active',
        },
        {
          expression:
            "has(namespaceObject.metadata.creationTimestamp) && namespaceObject.metadata.resourceVersion != '' && namespaceObject.metadata.name.startsWith('ns-object-')",
          message: 'the namespace has no creation time, resource version or name',
        },
        {
          expression: '!has(namespaceObject.metadata.deletionTimestamp) && !has(namespaceObject.metadata.generateName)',
          message: 'the namespace carries fields it was not given',
        },
        {
          // The apiserver declares the times timestamps but hands over strings: comparing one fails, in both.
          expression:
            "object.metadata.?labels[?'probe-time'].orValue('') == '' || namespaceObject.metadata.creationTimestamp < timestamp('2100-01-01T00:00:00Z')",
          message: 'unreachable',
        },
        {
          // A missing key fails the expression, under failurePolicy Fail a refusal in the apiserver's words.
          expression:
            "object.metadata.?labels[?'probe-missing'].orValue('') == '' || namespaceObject.metadata.labels['absent'] == 'x'",
          message: 'unreachable',
        },
      ],
    },
  },
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: NAMESPACES_POLICY },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [rule(['namespaces'])] },
      validations: [{ expression: 'namespaceObject == null', message: 'a Namespace is given a namespaceObject' }],
    },
  },
];

/** The bindings of one side: its namespace's ConfigMaps, and Namespaces labelled with the side. */
function bindings(namespace: string, side: string): object[] {
  const binding = (name: string, policyName: string, matchResources: object) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName, validationActions: ['Deny'], matchResources },
  });
  return [
    binding(`${POLICY}-${side}`, POLICY, {
      namespaceSelector: {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
      },
    }),
    binding(`${NAMESPACES_POLICY}-${side}`, NAMESPACES_POLICY, { objectSelector: { matchLabels: { side } } }),
  ];
}

interface Answer {
  readonly code: number;
  readonly refusal: string;
}

/** A dry-run create, and the refusal from the policy's name on (the webhook's words before it differ). */
async function createDryRun(collection: string, body: object): Promise<Answer> {
  const answer = await apiserverRequest('POST', `${collection}?dryRun=All`, {
    body: JSON.stringify(body),
    contentType: 'application/json',
  });
  const message = (answer.body as { message?: string } | undefined)?.message ?? '';
  const at = message.indexOf(REFUSAL_START);
  return { code: answer.status, refusal: answer.status === 201 ? '' : at < 0 ? message : message.slice(at) };
}

async function create(apiPath: string, body: object): Promise<void> {
  const answer = await apiserverRequest('POST', apiPath, {
    body: JSON.stringify(body),
    contentType: 'application/json',
  });
  assert.equal(answer.status, 201, `POST ${apiPath}: ${answer.text}`);
}

async function createNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${SUFFIX}`;
  await create('/api/v1/namespaces', {
    metadata: { name, labels: NAMESPACE_LABELS, annotations: NAMESPACE_ANNOTATIONS },
  });
  return name;
}

const configMap = (name: string, keys: number, owner?: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(owner ? { labels: { owner } } : {}) },
  data: Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, 'v'])),
});

/** ConfigMaps of every answer the policy gives: admitted, each validation refusing, the failing expression. */
const CONFIG_MAPS = [
  configMap('empty', 0),
  configMap('two', 2, 'payments'),
  configMap('three', 3),
  configMap('four-other', 4, 'other'),
  configMap('other', 1, 'other'),
  { ...configMap('probe', 1), metadata: { name: 'probe', labels: { 'probe-missing': 'yes' } } },
  { ...configMap('probe-time', 1), metadata: { name: 'probe-time', labels: { 'probe-time': 'yes' } } },
];

const CHAIN = (dir: string, namespace: string) => `
- admissionPolicies: native
  files: [${dir}]
- policy: restricted-namespaces
  match: { rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] } ] }
  matchConditions:
    - name: restricted
      expression: "namespaceObject != null && namespaceObject.metadata.labels['tier'] == 'restricted'"
    - name: this-suite
      expression: "request.namespace == '${namespace}'"
  validations:
    - expression: "object.metadata.name != 'forbidden-here'"
      messageExpression: "'no ' + object.metadata.name + ' in a namespace owned by ' + namespaceObject.metadata.annotations['acme.io/owner']"
`;

const RULES = [
  { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'namespaces'] },
];

describe('namespaceObject: the gateway reads the namespace as the apiserver does', function () {
  let gw: E2EGateway | undefined;
  let folder = '';
  let apiserverNamespace = '';
  let gatewayNamespace = '';
  const created: string[] = [];

  before(async function () {
    requireKube(this, 30, 'ValidatingAdmissionPolicy GA');
    this.timeout(120_000);
    apiserverNamespace = await createNamespace('ns-object-apiserver');
    gatewayNamespace = await createNamespace('ns-object-gateway');
    folder = await mkdtemp(path.join(os.tmpdir(), 'namespace-object-'));
    await writeFile(
      path.join(folder, 'policies.yaml'),
      [...POLICIES, ...bindings(gatewayNamespace, 'gateway')].map((o) => stringify(o)).join('---\n'),
    );
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN(folder, gatewayNamespace),
      validating: [{ name: 'validate', route: 'validate', rules: RULES }],
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 } },
    });
    const group = '/apis/admissionregistration.k8s.io/v1';
    for (const object of [...POLICIES, ...bindings(apiserverNamespace, 'apiserver')]) {
      const o = object as { kind: string; metadata: { name: string } };
      const resource = `${group}/${o.kind === 'ValidatingAdmissionPolicy' ? 'validatingadmissionpolicies' : 'validatingadmissionpolicybindings'}`;
      await create(resource, object);
      created.push(`${resource}/${o.metadata.name}`);
    }
    // The apiserver loads policies and bindings through informers: wait until they act.
    await eventually('the native policy to act', async () => {
      const answer = await createDryRun(`/api/v1/namespaces/${apiserverNamespace}/configmaps`, configMap('wait', 3));
      const namespaces = await createDryRun('/api/v1/namespaces', {
        metadata: { name: `wait-${SUFFIX}`, labels: { side: 'apiserver' } },
      });
      return answer.code === 422 && namespaces.code === 201 ? true : undefined;
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('gives the same answer and refusal for each ConfigMap, in the apiserver and in the gateway', async function () {
    const answers: Record<string, { apiserver: Answer; gateway: Answer }> = {};
    for (const body of CONFIG_MAPS) {
      const [apiserver, gateway] = await Promise.all([
        createDryRun(`/api/v1/namespaces/${apiserverNamespace}/configmaps`, body),
        createDryRun(`/api/v1/namespaces/${gatewayNamespace}/configmaps`, body),
      ]);
      answers[body.metadata.name] = {
        apiserver,
        gateway: { ...gateway, refusal: gateway.refusal.replaceAll(`-gateway'`, `-apiserver'`) },
      };
    }
    const binding = `with binding '${POLICY}-apiserver' denied request:`;
    const expected = (code: number, refusal: string): { apiserver: Answer; gateway: Answer } => ({
      apiserver: { code, refusal },
      gateway: { code, refusal },
    });
    assert.deepEqual(answers, {
      empty: expected(201, ''),
      two: expected(201, ''),
      three: expected(422, `${REFUSAL_START}${POLICY}' ${binding} 3 keys, over the namespace limit of 2`),
      'four-other': expected(422, `${REFUSAL_START}${POLICY}' ${binding} 4 keys, over the namespace limit of 2`),
      other: expected(403, `${REFUSAL_START}${POLICY}' ${binding} the owner label must be payments`),
      probe: expected(
        422,
        `${REFUSAL_START}${POLICY}' ${binding} expression 'object.metadata.?labels[?'probe-missing'].orValue('') == '' || namespaceObject.metadata.labels['absent'] == 'x'' resulted in error: no such key: absent`,
      ),
      'probe-time': expected(
        422,
        `${REFUSAL_START}${POLICY}' ${binding} expression 'object.metadata.?labels[?'probe-time'].orValue('') == '' || namespaceObject.metadata.creationTimestamp < timestamp('2100-01-01T00:00:00Z')' resulted in error: no such overload`,
      ),
    });
  });

  it('gives a Namespace no namespaceObject, in both', async function () {
    for (const side of ['apiserver', 'gateway']) {
      const answer = await createDryRun('/api/v1/namespaces', {
        metadata: { name: `ns-object-new-${SUFFIX}`, labels: { side, [SUITE_LABEL]: SUITE } },
      });
      assert.deepEqual(answer, { code: 201, refusal: '' }, side);
    }
  });

  it("runs a policy entry whose matchCondition and message read the namespace's labels and annotations", async function () {
    const answer = await createDryRun(
      `/api/v1/namespaces/${gatewayNamespace}/configmaps`,
      configMap('forbidden-here', 1),
    );
    assert.equal(answer.code, 422);
    assert.match(answer.refusal, /restricted-namespaces: no forbidden-here in a namespace owned by payments$/);
  });
});
