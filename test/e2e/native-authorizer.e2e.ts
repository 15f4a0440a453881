/**
 * `authorizer` against the apiserver's own: one ValidatingAdmissionPolicy whose matchConditions, variables and
 * validations check authorization (a resource with its namespace, a service account, a non-resource path, the
 * request's own resource, selectors) is created in the apiserver, bound to one namespace, and written to the
 * files of a gateway in cluster mode, bound to another; ConfigMaps are created (dry run) in both by impersonated
 * users whose RBAC differs, and every answer must be the same, refusal words included. Where the apiserver has no
 * ValidatingAdmissionPolicy (before 1.30), the gateway alone must give the same answers: its checks are
 * SubjectAccessReviews, which every supported apiserver serves.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { SUITE_LABEL, eventually, kubeAtLeast, kubeConfig, randomSuffix } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiserverRequest } from './server-side-apply.js';

const SUITE = 'native-authorizer';
const SUFFIX = randomSuffix();
const POLICY = `authorizer-${SUFFIX}`;
const REFUSAL_START = "ValidatingAdmissionPolicy '";

/** Every user below is in USERS (may create ConfigMaps); the others grant what the policy checks. */
const USERS = `authz-users-${SUFFIX}`;
const READERS = `authz-readers-${SUFFIX}`;
const DELETERS = `authz-deleters-${SUFFIX}`;
const READER = `authz-reader-${SUFFIX}`;
const PATH_USER = `authz-path-${SUFFIX}`;
const BUILDER_SA = `builder-${SUFFIX}`;
const PATH = `/authz-e2e-${SUFFIX}`;

interface Impersonated {
  readonly user: string;
  readonly groups: readonly string[];
}

const PEOPLE: Record<string, Impersonated> = {
  alice: { user: `authz-alice-${SUFFIX}`, groups: [USERS] },
  reader: { user: READER, groups: [USERS] },
  carol: { user: `authz-carol-${SUFFIX}`, groups: [USERS, READERS] },
  dave: { user: `authz-dave-${SUFFIX}`, groups: [USERS, READERS, DELETERS] },
  pathy: { user: PATH_USER, groups: [USERS, READERS] },
};

const SECRETS = "authorizer.group('').resource('secrets').namespace(request.namespace)";

const POLICY_OBJECT = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name: POLICY },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: {
      resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    },
    matchConditions: [
      // A reader's ConfigMap labelled `skip` is not the policy's business.
      {
        name: 'not-skipped-by-a-reader',
        expression: `!('skip' in object.metadata.?labels.orValue({})) || !${SECRETS}.check('get').allowed()`,
      },
    ],
    variables: [
      { name: 'secrets', expression: `${SECRETS}.check('get')` },
      { name: 'label', expression: 'object.metadata.?labels.orValue({})' },
      {
        name: 'selected',
        expression:
          "authorizer.group('').resource('secrets').fieldSelector('metadata.name=x').labelSelector('app in (a, b)').check('list')",
      },
    ],
    validations: [
      {
        expression: 'variables.secrets.allowed()',
        message: 'may not read secrets here',
      },
      {
        // The apiserver's reason: RBAC names the binding that allowed it, and whom it binds. A messageExpression
        // has no authorizer in the apiserver, so the variable fails there and the message is the fallback.
        expression:
          "!('tell' in variables.label) || !variables.secrets.reason().contains('\" to User \"' + request.userInfo.username + '\"')",
        messageExpression: "'reason: ' + variables.secrets.reason()",
        message: 'allowed by a binding of the user by name',
      },
      {
        expression: `!('as-sa' in variables.label) || authorizer.serviceAccount('default', variables.label['as-sa']).group('').resource('secrets').check('list').allowed()`,
        messageExpression: "'service account ' + variables.label['as-sa'] + ' may not list secrets'",
        reason: 'Forbidden',
      },
      {
        expression: `!('needs-path' in variables.label) || (authorizer.path('${PATH}').check('get').allowed() && !authorizer.path('${PATH}').check('get').errored())`,
        message: `may not get ${PATH}`,
      },
      {
        expression: "!('deletable' in variables.label) || authorizer.requestResource.check('delete').allowed()",
        messageExpression: "'may not delete ' + object.metadata.name + ' once created'",
      },
      {
        expression: "!('selected' in variables.label) || variables.selected.allowed()",
        message: 'may not list the selected secrets',
      },
    ],
  },
};

function binding(side: string, namespace: string): object {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: `${POLICY}-${side}` },
    spec: {
      policyName: POLICY,
      validationActions: ['Deny'],
      matchResources: {
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
        },
      },
    },
  };
}

/** Cluster-wide grants, so that RBAC's reasons name the same bindings in both namespaces. */
function rbac(): Array<{ path: string; body: object }> {
  const role = (name: string, rules: object[]) => ({
    path: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
    body: { metadata: { name }, rules },
  });
  const bind = (name: string, roleName: string, subjects: object[]) => ({
    path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
      subjects,
    },
  });
  const group = (name: string) => ({ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name });
  const user = (name: string) => ({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name });
  return [
    role(`authz-create-${SUFFIX}`, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }]),
    bind(`authz-create-${SUFFIX}`, `authz-create-${SUFFIX}`, [group(USERS)]),
    role(`authz-secrets-${SUFFIX}`, [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }]),
    bind(`authz-secrets-${SUFFIX}`, `authz-secrets-${SUFFIX}`, [
      user(READER),
      group(READERS),
      { kind: 'ServiceAccount', name: BUILDER_SA, namespace: 'default' },
    ]),
    role(`authz-delete-${SUFFIX}`, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] }]),
    bind(`authz-delete-${SUFFIX}`, `authz-delete-${SUFFIX}`, [group(DELETERS)]),
    role(`authz-path-${SUFFIX}`, [{ nonResourceURLs: [PATH], verbs: ['get'] }]),
    bind(`authz-path-${SUFFIX}`, `authz-path-${SUFFIX}`, [user(PATH_USER)]),
  ];
}

interface Answer {
  readonly code: number;
  readonly refusal: string;
}

/** A dry-run create of `body` in `namespace` as `as`, and the refusal from the policy's name on. */
async function createAs(as: Impersonated, namespace: string, body: object): Promise<Answer> {
  const kc = kubeConfig();
  const server = kc.getCurrentCluster()!.server;
  const headers: Record<string, string | string[]> = {
    accept: 'application/json',
    'content-type': 'application/json',
    'impersonate-user': as.user,
    'impersonate-group': [...as.groups],
  };
  const request: https.RequestOptions = { method: 'POST', headers };
  await kc.applyToHTTPSOptions(request);
  const text = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = https.request(
      new URL(`/api/v1/namespaces/${namespace}/configmaps?dryRun=All`, server),
      request,
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('error', reject);
        res.once('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.once('error', reject);
    req.end(JSON.stringify(body));
  });
  const message = (JSON.parse(text.text) as { message?: string }).message ?? '';
  const at = message.indexOf(REFUSAL_START);
  return { code: text.status, refusal: text.status === 201 ? '' : at < 0 ? message : message.slice(at) };
}

const configMap = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, labels },
  data: { k: 'v' },
});

/** Who creates what, and what both must answer (the refusal as the apiserver side's binding words it). */
const CASES: Array<{ who: keyof typeof PEOPLE; body: ReturnType<typeof configMap>; code: number; says: string }> = [
  { who: 'alice', body: configMap('plain'), code: 422, says: 'may not read secrets here' },
  { who: 'reader', body: configMap('plain'), code: 201, says: '' },
  { who: 'carol', body: configMap('plain'), code: 201, says: '' },
  { who: 'alice', body: configMap('skipped', { skip: 'y' }), code: 422, says: 'may not read secrets here' },
  { who: 'reader', body: configMap('skipped', { skip: 'y', tell: 'y' }), code: 201, says: '' },
  {
    who: 'reader',
    body: configMap('told', { tell: 'y' }),
    code: 422,
    says: 'allowed by a binding of the user by name',
  },
  { who: 'carol', body: configMap('told', { tell: 'y' }), code: 201, says: '' },
  { who: 'carol', body: configMap('built', { 'as-sa': BUILDER_SA }), code: 201, says: '' },
  {
    who: 'carol',
    body: configMap('built', { 'as-sa': 'stranger' }),
    code: 403,
    says: 'service account stranger may not list secrets',
  },
  { who: 'pathy', body: configMap('pathed', { 'needs-path': 'y' }), code: 201, says: '' },
  { who: 'carol', body: configMap('pathed', { 'needs-path': 'y' }), code: 422, says: `may not get ${PATH}` },
  { who: 'dave', body: configMap('kept', { deletable: 'y' }), code: 201, says: '' },
  { who: 'carol', body: configMap('kept', { deletable: 'y' }), code: 422, says: 'may not delete kept once created' },
  { who: 'carol', body: configMap('selected', { selected: 'y' }), code: 201, says: '' },
  { who: 'reader', body: configMap('selected', { selected: 'y' }), code: 201, says: '' },
];

describe('authorizer: admission policies check authorization as the apiserver does', function () {
  let gw: E2EGateway | undefined;
  let folder = '';
  let apiserverNamespace = '';
  let gatewayNamespace = '';
  const created: string[] = [];
  /** The apiserver runs ValidatingAdmissionPolicies (1.30+). */
  let native = false;

  async function create(apiPath: string, body: object): Promise<void> {
    const answer = await apiserverRequest('POST', apiPath, {
      body: JSON.stringify(body),
      contentType: 'application/json',
    });
    assert.equal(answer.status, 201, `POST ${apiPath}: ${answer.text}`);
    created.push(`${apiPath}/${(body as { metadata: { name: string } }).metadata.name}`);
  }

  before(async function () {
    this.timeout(120_000);
    native = kubeAtLeast(30);
    apiserverNamespace = `authz-apiserver-${SUFFIX}`;
    gatewayNamespace = `authz-gateway-${SUFFIX}`;
    for (const name of [apiserverNamespace, gatewayNamespace])
      await create('/api/v1/namespaces', { metadata: { name, labels: { [SUITE_LABEL]: SUITE } } });
    for (const { path: apiPath, body } of rbac()) await create(apiPath, body);
    folder = await mkdtemp(path.join(os.tmpdir(), 'native-authorizer-'));
    await writeFile(
      path.join(folder, 'policies.yaml'),
      [POLICY_OBJECT, binding('gateway', gatewayNamespace)].map((o) => stringify(o)).join('---\n'),
    );
    gw = await startE2EGateway({
      suite: SUITE,
      chain: `\n- admissionPolicies: native\n  files: [${folder}]\n`,
      validating: [
        {
          name: 'validate',
          route: 'validate',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        },
      ],
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 } },
    });
    if (native) {
      const group = '/apis/admissionregistration.k8s.io/v1';
      await create(`${group}/validatingadmissionpolicies`, POLICY_OBJECT);
      await create(`${group}/validatingadmissionpolicybindings`, binding('apiserver', apiserverNamespace));
    }
    // RBAC and the apiserver's policies load through informers: wait until both act.
    await eventually('RBAC and the native policy to act', async () => {
      const alice = await createAs(PEOPLE.alice!, native ? apiserverNamespace : gatewayNamespace, configMap('w'));
      const reader = await createAs(PEOPLE.reader!, gatewayNamespace, configMap('w'));
      return alice.code === 422 && reader.code === 201 ? true : undefined;
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('gives each impersonated user the same answer and refusal in the gateway as in the apiserver', async function () {
    const binding = `with binding '${POLICY}-apiserver' denied request:`;
    const words = (says: string) => (says ? `${REFUSAL_START}${POLICY}' ${binding} ${says}` : '');
    const expected: Record<string, Answer> = {};
    const gateway: Record<string, Answer> = {};
    const apiserver: Record<string, Answer> = {};
    for (const { who, body, code, says } of CASES) {
      const key = `${who} ${body.metadata.name}`;
      expected[key] = { code, refusal: words(says) };
      const answer = await createAs(PEOPLE[who]!, gatewayNamespace, body);
      gateway[key] = { ...answer, refusal: answer.refusal.replaceAll(`-gateway'`, `-apiserver'`) };
      if (native) apiserver[key] = await createAs(PEOPLE[who]!, apiserverNamespace, body);
    }
    assert.deepEqual(gateway, expected, 'the gateway');
    if (native) assert.deepEqual(apiserver, expected, 'the apiserver');
  });
});
