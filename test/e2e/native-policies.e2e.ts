/**
 * The gateway beside the apiserver's own admission policies on the same Pods (Kubernetes 1.34+: a
 * ValidatingAdmissionPolicy, GA in 1.30, and a MutatingAdmissionPolicy, v1beta1 behind its feature gate in 1.34
 * and 1.35, v1 from 1.36). The apiserver runs them in this order (README "Beside the apiserver's admission
 * policies"): MutatingAdmissionPolicies, then mutating webhooks (the gateway's /mutate), then
 * ValidatingAdmissionPolicies, then validating webhooks (the gateway's /validate). So the gateway's mutate steps
 * see what a MutatingAdmissionPolicy set, a ValidatingAdmissionPolicy judges the object the gateway mutated, and
 * a request it refuses never reaches the gateway's validate steps.
 */
import assert from 'node:assert/strict';
import { ORDER_ANNOTATION, SEEN_ANNOTATION_PREFIX } from './plugins.js';
import {
  SUITE_LABEL,
  apiError,
  core,
  eventually,
  kubeAtLeast,
  plain,
  randomSuffix,
  readStatus,
  requireKube,
  statusOf,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { pausePod } from './objects.js';
import { apiserverRequest } from './server-side-apply.js';

const SUITE = 'native';
const POD_RULE = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };
const MUTATING = `${SUITE}-owner`;
const VALIDATING = `${SUITE}-no-debug`;
const DEBUG_MESSAGE = 'debug Pods are not admitted';
const TEAM_MESSAGE = 'every Pod needs a team label';

const CHAIN = `
- plugin: record-order
  settings: { token: gateway }
- plugin: default-labels
  settings: { labels: { team: payments } }
- plugin: require-labels
  settings: { labels: [owner] }
`;

/** Only this file's namespaces, as the gateway's own webhooks here. */
const constraints = {
  resourceRules: [{ ...POD_RULE, scope: 'Namespaced' }],
  namespaceSelector: { matchLabels: { [SUITE_LABEL]: SUITE } },
};

/** Sets owner=platform on a Pod that has no owner: before any mutating webhook. */
const mutatingPolicy = {
  metadata: { name: MUTATING },
  spec: {
    matchConstraints: constraints,
    matchConditions: [{ name: 'no-owner', expression: "!('owner' in object.metadata.?labels.orValue({}))" }],
    failurePolicy: 'Fail',
    reinvocationPolicy: 'Never',
    mutations: [
      {
        patchType: 'ApplyConfiguration',
        applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"owner": "platform"}}}' },
      },
    ],
  },
};

/** Refuses debug Pods, and Pods without the team label the gateway's default-labels sets. */
const validatingPolicy = {
  metadata: { name: VALIDATING },
  spec: {
    matchConstraints: constraints,
    failurePolicy: 'Fail',
    validations: [
      { expression: "object.metadata.?labels.orValue({}).?debug.orValue('') != 'true'", message: DEBUG_MESSAGE },
      { expression: "'team' in object.metadata.?labels.orValue({})", message: TEAM_MESSAGE },
    ],
  },
};

const binding = (policy: string, extra: object = {}) => ({
  metadata: { name: policy },
  spec: { policyName: policy, ...extra },
});

/** Creates (POST) a cluster-scoped admissionregistration object as JSON; fails with the apiserver's answer. */
async function create(apiPath: string, body: object): Promise<void> {
  const answer = await apiserverRequest('POST', apiPath, {
    body: JSON.stringify(body),
    contentType: 'application/json',
  });
  assert.equal(answer.status, 201, `POST ${apiPath}: ${answer.text}`);
}

describe('the gateway beside the apiserver’s own admission policies (ValidatingAdmissionPolicy, MutatingAdmissionPolicy)', function () {
  let gw: E2EGateway | undefined;
  let namespace = '';
  const created: string[] = [];

  before(async function () {
    requireKube(this, 34, 'MutatingAdmissionPolicy');
    // v1 from 1.36; v1beta1 in 1.34 and 1.35, where the suite's cluster turns its feature gate on.
    const mapVersion = kubeAtLeast(36) ? 'v1' : 'v1beta1';
    const group = '/apis/admissionregistration.k8s.io';
    const objects: [string, object][] = [
      [`${group}/${mapVersion}/mutatingadmissionpolicies`, mutatingPolicy],
      [`${group}/${mapVersion}/mutatingadmissionpolicybindings`, binding(MUTATING)],
      [`${group}/v1/validatingadmissionpolicies`, validatingPolicy],
      [`${group}/v1/validatingadmissionpolicybindings`, binding(VALIDATING, { validationActions: ['Deny'] })],
    ];
    for (const [apiPath, body] of objects) {
      await create(apiPath, body);
      created.push(`${apiPath}/${(body as { metadata: { name: string } }).metadata.name}`);
    }
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN,
      mutating: [{ name: 'mutate', route: 'mutate', rules: [POD_RULE] }],
      validating: [{ name: 'validate', route: 'validate', rules: [POD_RULE] }],
    });
    namespace = await gw.namespace();
    // The apiserver loads policies and bindings through informers: wait until both act on a dry-run Pod.
    await eventually('both native policies to act', async () => {
      const owner = await core()
        .createNamespacedPod({ namespace, body: pausePod(`probe-${randomSuffix()}`), dryRun: 'All' })
        .then((pod) => pod.metadata?.labels?.owner);
      const debug = await readStatus(() =>
        core().createNamespacedPod({
          namespace,
          body: pausePod(`probe-${randomSuffix()}`, { debug: 'true' }),
          dryRun: 'All',
        }),
      );
      // A validation without a `reason` refuses as Invalid: HTTP 422.
      return owner === 'platform' && debug === 422 ? true : undefined;
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    for (const objectPath of created.reverse()) await apiserverRequest('DELETE', objectPath);
  });

  it('stores a Pod with the policy’s mutation and the gateway’s, the gateway having seen the policy’s', async function () {
    const name = `web-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: pausePod(name) });

    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { owner: 'platform', team: 'payments' });
    assert.equal(stored.metadata?.annotations?.[ORDER_ANNOTATION], 'gateway');
    // The MutatingAdmissionPolicy ran first: the gateway's first step already saw owner.
    assert.equal(
      stored.metadata?.annotations?.[`${SEEN_ANNOTATION_PREFIX}gateway`],
      'image=registry.k8s.io/pause:3.9;cpu=none;labels=owner',
    );
  });

  it('has the ValidatingAdmissionPolicy judge the object the gateway mutated: its team label lets it through', async function () {
    // A Pod that names an owner itself: no native mutation, and the team label only comes from the gateway.
    const name = `owned-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace, body: pausePod(name, { owner: 'web-team' }) });
    const stored = await core().readNamespacedPod({ name, namespace });
    assert.deepEqual(stored.metadata?.labels, { owner: 'web-team', team: 'payments' });
  });

  it('refuses a debug Pod in the policy’s words (422 Invalid), before the gateway’s validate steps are asked', async function () {
    const calls = async () =>
      metricValue(await gw!.metrics(), 'admission_gateway_step_calls_total', {
        step: 'require-labels',
        outcome: 'allowed',
      }) ?? 0;
    const before = await calls();
    const name = `debug-${randomSuffix()}`;
    const err = await apiError(core().createNamespacedPod({ namespace, body: pausePod(name, { debug: 'true' }) }));

    // A validation without a `reason` refuses as Invalid (422); the message names policy and binding.
    const denial = `ValidatingAdmissionPolicy '${VALIDATING}' with binding '${VALIDATING}' denied request: ${DEBUG_MESSAGE}`;
    assert.equal(err.code, 422);
    assert.deepEqual(plain(statusOf(err)), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `pods "${name}" is forbidden: ${denial}`,
      reason: 'Invalid',
      details: { name, kind: 'pods', causes: [{ message: denial }] },
      code: 422,
    });
    assert.equal(await readStatus(() => core().readNamespacedPod({ name, namespace })), 404);
    assert.equal(await calls(), before, 'the gateway’s validating webhook was not called');
  });
});
