/**
 * `fromCluster: true` against the real apiserver: a ValidatingAdmissionPolicy bound with `validationActions:
 * [Audit]` in the cluster (so the apiserver only audits it) is rehearsed by a gateway in cluster mode whose
 * `admissionPolicies` entry reads the cluster's policies with `shadow: true`: a ConfigMap the policy would refuse is
 * admitted by both, and the gateway counts it as `would_deny`. The gateway follows a change of the policy's
 * expression and its deletion without a restart, and a binding's paramRef reads its ConfigMap from the cluster.
 */
import assert from 'node:assert/strict';
import { eventually, randomSuffix, requireKube } from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiserverRequest } from './server-side-apply.js';

const SUITE = 'native-cluster-policies';
const SUFFIX = randomSuffix();
const POLICY = `rehearsed-${SUFFIX}`;
const PARAMS_POLICY = `rehearsed-params-${SUFFIX}`;
const PARAMS = 'rehearsal-params';
const GROUP = '/apis/admissionregistration.k8s.io/v1';
const POLICIES = `${GROUP}/validatingadmissionpolicies`;
const BINDINGS = `${GROUP}/validatingadmissionpolicybindings`;

const CONFIG_MAPS = {
  operations: ['CREATE'],
  apiGroups: [''],
  apiVersions: ['v1'],
  resources: ['configmaps'],
};

const policy = (name: string, expression: string, paramKind?: object) => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name },
  spec: {
    failurePolicy: 'Fail',
    ...(paramKind ? { paramKind } : {}),
    matchConstraints: { resourceRules: [CONFIG_MAPS] },
    validations: [{ expression, messageExpression: "'no ' + object.metadata.name" }],
  },
});

/** An Audit binding of `policyName` to `namespace` only. */
const binding = (policyName: string, namespace: string, paramRef?: object) => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicyBinding',
  metadata: { name: policyName },
  spec: {
    policyName,
    validationActions: ['Audit'],
    ...(paramRef ? { paramRef } : {}),
    matchResources: {
      namespaceSelector: {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
      },
    },
  },
});

const CHAIN = `
- admissionPolicies: native
  fromCluster: true
  shadow: true
`;

const RULES = [CONFIG_MAPS];

async function send(method: string, apiPath: string, body?: object): Promise<unknown> {
  const answer = await apiserverRequest(method, apiPath, {
    ...(body ? { body: JSON.stringify(body) } : {}),
    contentType: method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
  });
  assert.ok(answer.status >= 200 && answer.status < 300, `${method} ${apiPath}: ${answer.text}`);
  return answer.body;
}

describe('admissionPolicies fromCluster: the cluster’s own policies rehearsed in the gateway', function () {
  let gw: E2EGateway | undefined;
  let namespace = '';
  const created: string[] = [];

  /** The native steps `/chain` shows now in `phase`, by name, with where their policy came from. */
  async function nativeSteps(phase: 'mutate' | 'validate' = 'validate'): Promise<Record<string, unknown>> {
    const res = await fetch(`${gw!.gateway.opsUrl}/chain`);
    const chain = (await res.json()) as Record<typeof phase, { name: string; source: string; origin?: unknown }[]>;
    return Object.fromEntries(
      chain[phase].filter((s) => s.source === 'admissionPolicies').map((s) => [s.name, s.origin]),
    );
  }

  /** The step's shadow calls (whatever their outcome) and would_deny disagreements so far. */
  async function shadowCounts(step: string): Promise<{ calls: number; wouldDeny: number }> {
    const text = await gw!.metrics();
    const name = `native/${step}/${step}`;
    const calls = ['allowed', 'denied', 'error', 'skipped', 'dropped'].reduce(
      (sum, outcome) => sum + (metricValue(text, 'admission_gateway_shadow_calls_total', { step: name, outcome }) ?? 0),
      0,
    );
    const wouldDeny =
      metricValue(text, 'admission_gateway_shadow_disagreements_total', { step: name, kind: 'would_deny' }) ?? 0;
    return { calls, wouldDeny };
  }

  /** A dry-run create of ConfigMap `name`: the apiserver's status code. */
  async function createConfigMap(name: string): Promise<number> {
    const answer = await apiserverRequest('POST', `/api/v1/namespaces/${namespace}/configmaps?dryRun=All`, {
      body: JSON.stringify({ metadata: { name }, data: { a: 'b' } }),
      contentType: 'application/json',
    });
    return answer.status;
  }

  /**
   * Creates ConfigMap `name` (dry run): both must admit it. Once the step's shadow run for it is over, whether it
   * counted it as would_deny.
   */
  async function rehearse(step: string, name: string): Promise<boolean> {
    const before = await shadowCounts(step);
    assert.equal(await createConfigMap(name), 201, name);
    const after = await eventually(`the shadow run of ${step} for ${name}`, async () => {
      const now = await shadowCounts(step);
      return now.calls > before.calls ? now : undefined;
    });
    return after.wouldDeny > before.wouldDeny;
  }

  before(async function () {
    requireKube(this, 30, 'ValidatingAdmissionPolicy GA');
    this.timeout(120_000);
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN,
      validating: [{ name: 'validate', route: 'validate', rules: RULES }],
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 } },
    });
    namespace = await gw.namespace();
    await send('POST', POLICIES, policy(POLICY, "!object.metadata.name.startsWith('bad-')"));
    created.push(`${POLICIES}/${POLICY}`);
    await send('POST', BINDINGS, binding(POLICY, namespace));
    created.push(`${BINDINGS}/${POLICY}`);
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
  });

  it('runs the cluster’s Audit binding as if bound with Deny: admitted by both, counted as would_deny', async function () {
    const read = (await send('GET', `${POLICIES}/${POLICY}`)) as { metadata: { resourceVersion: string } };
    const steps = await eventually('the cluster policy in /chain', async () => {
      const found = await nativeSteps();
      return found[`native/${POLICY}/${POLICY}`] ? found : undefined;
    });
    assert.deepEqual(steps[`native/${POLICY}/${POLICY}`], {
      policy: { source: 'cluster', resourceVersion: read.metadata.resourceVersion },
      binding: (steps[`native/${POLICY}/${POLICY}`] as { binding: object }).binding,
    });
    assert.deepEqual([await rehearse(POLICY, 'bad-one'), await rehearse(POLICY, 'good-one')], [true, false]);
  });

  it('reads the cluster’s MutatingAdmissionPolicies (v1 on 1.37) into mutate steps', async function () {
    requireKube(this, 36, 'MutatingAdmissionPolicy GA');
    const name = `rehearsed-mutating-${SUFFIX}`;
    const mutating = `${GROUP}/mutatingadmissionpolicies`;
    const mutatingBindings = `${GROUP}/mutatingadmissionpolicybindings`;
    const made = (await send('POST', mutating, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        matchConstraints: { resourceRules: [CONFIG_MAPS] },
        reinvocationPolicy: 'Never',
        mutations: [
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"rehearsed": "yes"}}}' },
          },
        ],
      },
    })) as { metadata: { resourceVersion: string } };
    created.push(`${mutating}/${name}`);
    // Bound to no namespace there is: neither the apiserver nor the gateway changes anything with it.
    const bound = (await send('POST', mutatingBindings, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name },
      spec: {
        policyName: name,
        matchResources: { namespaceSelector: { matchLabels: { 'no-such-label': SUFFIX } } },
      },
    })) as { metadata: { resourceVersion: string } };
    created.push(`${mutatingBindings}/${name}`);
    const origin = await eventually(
      'the mutating policy in /chain',
      async () => (await nativeSteps('mutate'))[`native/${name}/${name}`],
    );
    assert.deepEqual(origin, {
      policy: { source: 'cluster', resourceVersion: made.metadata.resourceVersion },
      binding: { source: 'cluster', resourceVersion: bound.metadata.resourceVersion },
    });
  });

  it('follows a change of the policy’s expression without a restart', async function () {
    const changed = (await send('PATCH', `${POLICIES}/${POLICY}`, {
      spec: { validations: [{ expression: "!object.metadata.name.startsWith('worse-')" }] },
    })) as { metadata: { resourceVersion: string } };
    await eventually('the changed policy in /chain', async () => {
      const origin = (await nativeSteps())[`native/${POLICY}/${POLICY}`] as { policy: { resourceVersion: string } };
      return origin?.policy.resourceVersion === changed.metadata.resourceVersion ? true : undefined;
    });
    assert.deepEqual([await rehearse(POLICY, 'worse-one'), await rehearse(POLICY, 'bad-two')], [true, false]);
  });

  it('stops running it once it is deleted', async function () {
    await send('DELETE', `${BINDINGS}/${POLICY}`);
    await send('DELETE', `${POLICIES}/${POLICY}`);
    created.splice(0, 2);
    await eventually('the deleted policy gone from /chain', async () =>
      (await nativeSteps())[`native/${POLICY}/${POLICY}`] === undefined ? true : undefined,
    );
    const before = await shadowCounts(POLICY);
    assert.equal(await createConfigMap('worse-two'), 201);
    // Sent after the review of worse-two: once its answer is back, worse-two's shadow run (if any) was scheduled.
    assert.equal(await createConfigMap('worse-three'), 201);
    assert.deepEqual(await shadowCounts(POLICY), before);
  });

  it('reads a binding’s params from a ConfigMap in the cluster, and follows its changes', async function () {
    await send('POST', `/api/v1/namespaces/${namespace}/configmaps`, {
      metadata: { name: PARAMS },
      data: { forbidden: 'nope' },
    });
    await send(
      'POST',
      POLICIES,
      policy(PARAMS_POLICY, 'object.metadata.name != params.data.forbidden', { apiVersion: 'v1', kind: 'ConfigMap' }),
    );
    created.push(`${POLICIES}/${PARAMS_POLICY}`);
    await send(
      'POST',
      BINDINGS,
      binding(PARAMS_POLICY, namespace, { name: PARAMS, namespace, parameterNotFoundAction: 'Deny' }),
    );
    created.push(`${BINDINGS}/${PARAMS_POLICY}`);
    await eventually('the params policy in /chain', async () =>
      (await nativeSteps())[`native/${PARAMS_POLICY}/${PARAMS_POLICY}`] ? true : undefined,
    );
    // Until its watch has read the ConfigMap, parameterNotFoundAction Deny would refuse every ConfigMap.
    await eventually('the params read', async () =>
      (await rehearse(PARAMS_POLICY, `fine-${randomSuffix()}`)) ? undefined : true,
    );
    assert.deepEqual([await rehearse(PARAMS_POLICY, 'nope'), await rehearse(PARAMS_POLICY, 'nah')], [true, false]);
    await send('PATCH', `/api/v1/namespaces/${namespace}/configmaps/${PARAMS}`, { data: { forbidden: 'nah' } });
    await eventually('the changed params read', async () =>
      (await rehearse(PARAMS_POLICY, 'nah')) ? true : undefined,
    );
    assert.equal(await rehearse(PARAMS_POLICY, 'nope'), false);
  });
});
