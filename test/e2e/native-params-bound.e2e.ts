/**
 * `kube.policyParams` against the real apiserver: a cluster ValidatingAdmissionPolicy whose binding's paramRef
 * selects ConfigMaps by label in every namespace — anyone who may create a ConfigMap can add to what it selects.
 * The gateway (bound lowered to 3 objects) reads three; a fourth takes the query over its bound, and the gateway
 * refuses what the binding matches in the apiserver's words for a binding whose params cannot be collected
 * (failurePolicy Fail), counting it in `policy_param_queries{state="over_bound"}`; once two are deleted, it reads
 * them again and admits.
 */
import assert from 'node:assert/strict';
import { eventually, randomSuffix, requireKube } from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiserverRequest, apiserverSend as send } from './server-side-apply.js';

const SUITE = 'native-params-bound';
const SUFFIX = randomSuffix();
const POLICY = `bounded-${SUFFIX}`;
const PARAM_LABEL = `bounded-param-${SUFFIX}`;
const PROBE_LABEL = `probe-${SUFFIX}`;
const GROUP = '/apis/admissionregistration.k8s.io/v1';
const POLICIES = `${GROUP}/validatingadmissionpolicies`;
const BINDINGS = `${GROUP}/validatingadmissionpolicybindings`;
const BOUND = 3;

const CONFIG_MAPS = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] };

const CHAIN = `
- admissionPolicies: native
  fromCluster: true
`;

describe('admissionPolicies fromCluster: params past kube.policyParams fail their bindings, then recover', function () {
  let gw: E2EGateway | undefined;
  let namespace = '';
  const created: string[] = [];

  /** A dry-run create of a ConfigMap the binding matches: 'allowed', or the refusal's message. */
  async function probe(): Promise<string> {
    const answer = await apiserverRequest('POST', `/api/v1/namespaces/${namespace}/configmaps?dryRun=All`, {
      body: JSON.stringify({ metadata: { name: `probe-${randomSuffix()}`, labels: { [PROBE_LABEL]: 'yes' } } }),
      contentType: 'application/json',
    });
    if (answer.status === 201) return 'allowed';
    const message = (answer.body as { message?: unknown } | undefined)?.message;
    return typeof message === 'string' ? message : answer.text;
  }

  async function createParam(name: string): Promise<void> {
    const path = `/api/v1/namespaces/${namespace}/configmaps`;
    await send('POST', path, { metadata: { name, labels: { [PARAM_LABEL]: 'yes' } }, data: { forbidden: 'nope' } });
    created.push(`${path}/${name}`);
  }

  async function gauge(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    return metricValue(await gw!.metrics(), name, labels);
  }

  before(async function () {
    requireKube(this, 30, 'ValidatingAdmissionPolicy GA');
    this.timeout(120_000);
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN,
      validating: [{ name: 'validate', route: 'validate', rules: [CONFIG_MAPS] }],
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 } },
      kube: { policyParams: { maxObjects: BOUND } },
    });
    namespace = await gw.namespace();
    // Fail, Deny, by selector in every namespace: the apiserver reads the request's namespace's params; the
    // gateway watches the selector everywhere (the request's namespace is known only per review).
    await send('POST', POLICIES, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: POLICY },
      spec: {
        failurePolicy: 'Fail',
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        matchConstraints: { resourceRules: [CONFIG_MAPS] },
        validations: [{ expression: 'object.metadata.name != params.data.forbidden' }],
      },
    });
    created.push(`${POLICIES}/${POLICY}`);
    await send('POST', BINDINGS, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: POLICY },
      spec: {
        policyName: POLICY,
        validationActions: ['Deny'],
        paramRef: { selector: { matchLabels: { [PARAM_LABEL]: 'yes' } }, parameterNotFoundAction: 'Allow' },
        matchResources: {
          namespaceSelector: {
            matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
          },
          objectSelector: { matchLabels: { [PROBE_LABEL]: 'yes' } },
        },
      },
    });
    created.push(`${BINDINGS}/${POLICY}`);
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
  });

  it('reads params within the bound, refuses once a fourth takes them past it, and admits again once they fit', async function () {
    for (const name of ['p1', 'p2', 'p3']) await createParam(name);
    await eventually('the three params read', async () =>
      (await gauge('admission_gateway_policy_params_objects')) === BOUND ? true : undefined,
    );
    assert.equal(await probe(), 'allowed');
    assert.equal(await gauge('admission_gateway_policy_param_queries', { state: 'over_bound' }), 0);

    await createParam('p4');
    const refusal = await eventually('the params over the bound', async () => {
      const answer = await probe();
      return answer === 'allowed' ? undefined : answer;
    });
    assert.equal(
      refusal,
      `admission webhook "${gw!.webhookName('validate')}" denied the request: ` +
        `ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: failed to configure binding: ` +
        `the params of v1 ConfigMap selected by "${PARAM_LABEL}=yes" exceed the gateway's bound ` +
        `(more than ${BOUND} objects, kube.policyParams.maxObjects): none are read until they fit`,
    );
    assert.deepEqual(
      [
        await gauge('admission_gateway_policy_param_queries', { state: 'over_bound' }),
        await gauge('admission_gateway_policy_params_objects'),
      ],
      [1, 0],
    );

    for (const name of ['p1', 'p2']) {
      await send('DELETE', `/api/v1/namespaces/${namespace}/configmaps/${name}`);
      created.splice(created.indexOf(`/api/v1/namespaces/${namespace}/configmaps/${name}`), 1);
    }
    await eventually('the params read again', async () => ((await probe()) === 'allowed' ? true : undefined));
    assert.deepEqual(
      [
        await gauge('admission_gateway_policy_param_queries', { state: 'over_bound' }),
        await gauge('admission_gateway_policy_params_objects'),
      ],
      [0, 2],
    );
  });
});
