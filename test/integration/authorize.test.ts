/**
 * POST /authorize through the running gateway over HTTPS: SubjectAccessReviews as kube-apiserver's webhook
 * authorizer sends them (v1 and v1beta1), answered with a denial and its reason or with no opinion — never
 * allowed. The control plane's identities and the gateway's own are never asked about; a failing step forbids
 * under Fail and has no opinion under Ignore.
 */
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { definePlugin, deny, type AuthorizeContext } from '../../server/plugin-api/index.js';

/** What each authorize hook saw, by step name. */
const seen: Array<{ step: string; context: Omit<AuthorizeContext, 'signal' | 'log'> }> = [];

const record = (step: string, ctx: AuthorizeContext) => {
  const { verb, apiGroup, apiVersion, resource, subresource, namespace, name, path, user, namespaceLabels } = ctx;
  seen.push({
    step,
    context: {
      ...{ verb, apiGroup, apiVersion, resource, subresource, namespace, name, path, namespaceLabels },
      labelSelector: ctx.labelSelector,
      fieldSelector: ctx.fieldSelector,
      user: { ...user, extra: { ...user.extra } },
    },
  });
};

/** Forbids reading Secrets in the namespace named in its settings (found by the namespace's name label). */
const secretGuard = definePlugin({
  name: 'secret-guard',
  match: { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }] },
  authorizeMatch: { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['secrets'] },
  settings: (raw) => raw as { restricted: string },
  setup: ({ restricted }) => ({
    authorize(ctx) {
      record('secret-guard', ctx);
      if (ctx.namespaceLabels?.['kubernetes.io/metadata.name'] === restricted) {
        return deny(`Secrets in ${restricted} are restricted`);
      }
      return undefined;
    },
  }),
});

/** Throws, or never answers, for pods/exec. */
const broken = definePlugin({
  name: 'broken',
  match: { rules: [{ operations: ['CONNECT'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/exec'] }] },
  authorizeMatch: { verbs: ['create', 'get'], resources: ['pods/exec'] },
  settings: (raw) => raw as { how: 'throw' | 'hang' },
  setup: ({ how }) => ({
    authorize(ctx) {
      record('broken', ctx);
      if (how === 'throw') throw new Error('lookup service unavailable');
      return new Promise<undefined>(() => undefined);
    },
  }),
});

const V1 = 'authorization.k8s.io/v1';
const V1BETA1 = 'authorization.k8s.io/v1beta1';

/** A SubjectAccessReview as the apiserver's webhook authorizer sends it. */
function sar(
  spec: {
    user?: string;
    groups?: string[];
    resourceAttributes?: Record<string, unknown>;
    nonResourceAttributes?: Record<string, string | undefined>;
  },
  apiVersion = V1,
): object {
  const { user = 'alice', groups = ['e2e:readers', 'system:authenticated'], ...attributes } = spec;
  return {
    apiVersion,
    kind: 'SubjectAccessReview',
    metadata: { creationTimestamp: null },
    spec: {
      ...attributes,
      user,
      [apiVersion === V1 ? 'groups' : 'group']: groups,
      uid: 'a1b2',
      extra: { 'authentication.kubernetes.io/pod-name': ['x'] },
    },
    status: { allowed: false },
  };
}

const getSecret = (namespace: string, name = 'db') => ({
  resourceAttributes: { namespace, verb: 'get', group: '', version: 'v1', resource: 'secrets', name },
});

/** An exec into Pod `web`, as the apiserver asks about it. */
const EXEC = {
  resourceAttributes: {
    namespace: 'default',
    verb: 'create',
    version: 'v1',
    resource: 'pods',
    subresource: 'exec',
    name: 'web',
  },
};

const NO_OPINION = (apiVersion = V1) => ({ apiVersion, kind: 'SubjectAccessReview', status: { allowed: false } });

describe('POST /authorize', () => {
  let harness: Harness;

  before(async () => {
    harness = await startHarness({
      yaml: `
server: { service: { namespace: gateway-system, name: admission-gateway } }
chain:
  - plugin: secret-guard
    settings: { restricted: vault }
  - plugin: broken
    name: broken-fail
    settings: { how: throw }
    failurePolicy: Fail
  - plugin: broken
    name: broken-ignore
    settings: { how: throw }
    failurePolicy: Ignore
`,
      plugins: [secretGuard, broken],
    });
  });

  after(async () => {
    await harness.close();
  });

  beforeEach(() => {
    seen.length = 0;
  });

  it('forbids with the step’s reason, echoing the request’s version (v1)', async () => {
    const answer = await harness.post('/authorize', sar(getSecret('vault')));
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, {
      apiVersion: V1,
      kind: 'SubjectAccessReview',
      status: { allowed: false, denied: true, reason: 'secret-guard: Secrets in vault are restricted' },
    });
    assert.deepEqual(seen, [
      {
        step: 'secret-guard',
        context: {
          verb: 'get',
          apiGroup: '',
          apiVersion: 'v1',
          resource: 'secrets',
          subresource: '',
          namespace: 'vault',
          name: 'db',
          path: '',
          labelSelector: [],
          fieldSelector: [],
          user: {
            username: 'alice',
            uid: 'a1b2',
            groups: ['e2e:readers', 'system:authenticated'],
            extra: { 'authentication.kubernetes.io/pod-name': ['x'] },
          },
          namespaceLabels: { 'kubernetes.io/metadata.name': 'vault' },
        },
      },
    ]);
  });

  it('passes a list’s label and field selectors (Kubernetes 1.34+) to the step as the apiserver parsed them', async () => {
    const labelSelector = [
      { key: 'team', operator: 'In', values: ['a', 'b'] },
      { key: 'temporary', operator: 'DoesNotExist' },
    ];
    const fieldSelector = [{ key: 'type', operator: 'NotIn', values: ['kubernetes.io/tls'] }];
    const list = {
      resourceAttributes: {
        namespace: 'default',
        verb: 'list',
        version: 'v1',
        resource: 'secrets',
        labelSelector: { requirements: labelSelector },
        fieldSelector: { requirements: fieldSelector },
      },
    };
    assert.deepEqual((await harness.post('/authorize', sar(list))).body, NO_OPINION());
    assert.deepEqual(
      seen.map((s) => [s.step, s.context.labelSelector, s.context.fieldSelector]),
      [
        [
          'secret-guard',
          [
            { ...labelSelector[0], values: ['a', 'b'] },
            { ...labelSelector[1], values: [] },
          ],
          fieldSelector,
        ],
      ],
    );
  });

  it('reads v1beta1 (groups under `group`) and answers in v1beta1', async () => {
    const list = { resourceAttributes: { namespace: 'vault', verb: 'list', version: 'v1', resource: 'secrets' } };
    const answer = await harness.post('/authorize', sar({ ...list, groups: ['team-a'] }, V1BETA1));
    assert.deepEqual(answer.body, {
      apiVersion: V1BETA1,
      kind: 'SubjectAccessReview',
      status: { allowed: false, denied: true, reason: 'secret-guard: Secrets in vault are restricted' },
    });
    assert.deepEqual(seen[0]?.context.user.groups, ['team-a']);
  });

  it('has no opinion elsewhere: another namespace, another verb, another resource, a non-resource path', async () => {
    const cases = [
      getSecret('default'),
      { resourceAttributes: { namespace: 'vault', verb: 'delete', version: 'v1', resource: 'secrets', name: 'db' } },
      { resourceAttributes: { namespace: 'vault', verb: 'get', version: 'v1', resource: 'configmaps', name: 'db' } },
      { resourceAttributes: { namespace: 'vault', verb: 'get', group: 'apps', version: 'v1', resource: 'secrets' } },
      { nonResourceAttributes: { path: '/healthz', verb: 'get' } },
    ];
    for (const spec of cases) {
      assert.deepEqual((await harness.post('/authorize', sar(spec))).body, NO_OPINION(), JSON.stringify(spec));
    }
    // Only the first matched the guard's rule; the others never reached a step.
    assert.deepEqual(
      seen.map((s) => [s.step, s.context.namespace]),
      [['secret-guard', 'default']],
    );
  });

  it('never asks about system:masters, the control plane or the gateway’s own ServiceAccounts', async () => {
    const before = await harness.metric('admission_gateway_authorize_requests_total', { decision: 'excluded' });
    for (const who of [
      { user: 'admin', groups: ['system:masters'] },
      { user: 'system:kube-controller-manager', groups: ['system:authenticated'] },
      { user: 'system:node:worker-1', groups: ['system:nodes', 'system:authenticated'] },
      { user: 'system:serviceaccount:gateway-system:admission-gateway', groups: ['system:serviceaccounts'] },
    ]) {
      assert.deepEqual((await harness.post('/authorize', sar({ ...who, ...getSecret('vault') }))).body, NO_OPINION());
    }
    assert.deepEqual(seen, []);
    assert.equal(
      await harness.metric('admission_gateway_authorize_requests_total', { decision: 'excluded' }),
      before + 4,
    );
  });

  it('forbids when a Fail step fails, and has no opinion when an Ignore step does', async () => {
    const failOpen = await harness.metric('admission_gateway_fail_open_total', { step: 'broken-ignore' });
    assert.deepEqual((await harness.post('/authorize', sar(EXEC))).body, {
      apiVersion: V1,
      kind: 'SubjectAccessReview',
      status: {
        allowed: false,
        denied: true,
        reason: 'plugin "broken-fail" failed (error): lookup service unavailable',
      },
    });
    assert.deepEqual(
      seen.map((s) => [s.step, s.context.subresource]),
      [
        ['broken', 'exec'],
        ['broken', 'exec'],
      ],
    );
    assert.equal(await harness.metric('admission_gateway_fail_open_total', { step: 'broken-ignore' }), failOpen + 1);
    assert.equal(
      await harness.metric('admission_gateway_step_calls_total', {
        step: 'broken-fail',
        phase: 'authorize',
        outcome: 'error',
      }),
      1,
    );
  });

  it('counts its decisions and step outcomes', async () => {
    const metric = (decision: string) => harness.metric('admission_gateway_authorize_requests_total', { decision });
    const calls = (outcome: string) =>
      harness.metric('admission_gateway_step_calls_total', { step: 'secret-guard', phase: 'authorize', outcome });
    const counts = async () => [
      await metric('denied'),
      await metric('no_opinion'),
      await calls('denied'),
      await calls('no_opinion'),
    ];
    const [denied, none, stepDenied, stepNone] = await counts();
    await harness.post('/authorize', sar(getSecret('vault')));
    await harness.post('/authorize', sar(getSecret('default')));
    await harness.post('/authorize', sar({ nonResourceAttributes: { path: '/version', verb: 'get' } }));
    // Two reviews reached the guard (one denied, one not); /version matched no step.
    assert.deepEqual(await counts(), [denied! + 1, none! + 2, stepDenied! + 1, stepNone! + 1]);
  });

  it('answers 400 with the problem for what is not a SubjectAccessReview', async () => {
    const cases: Array<[object, string, string]> = [
      [
        { apiVersion: 'authorization.k8s.io/v2', kind: 'SubjectAccessReview', spec: {} },
        V1,
        'apiVersion: expected authorization.k8s.io/v1 or authorization.k8s.io/v1beta1',
      ],
      [
        { apiVersion: V1, kind: 'SubjectAccessReview', spec: { user: 'x' } },
        V1,
        'spec: expected resourceAttributes or nonResourceAttributes',
      ],
      [
        { apiVersion: V1BETA1, kind: 'SubjectAccessReview', spec: { user: 'x', group: 'g', resourceAttributes: {} } },
        V1BETA1,
        'spec.group: expected a list of at most 1024 strings',
      ],
      [
        sar({ resourceAttributes: { verb: 'list', resource: 'secrets', labelSelector: { requirements: {} } } }),
        V1,
        'spec.resourceAttributes.labelSelector.requirements: expected a list of at most 256',
      ],
      [
        sar({
          resourceAttributes: {
            verb: 'list',
            resource: 'secrets',
            fieldSelector: { requirements: [{ key: 'type', operator: 'Like', values: ['x'] }] },
          },
        }),
        V1,
        'spec.resourceAttributes.fieldSelector.requirements[0].operator: expected one of In, NotIn, Exists, DoesNotExist',
      ],
    ];
    for (const [body, apiVersion, evaluationError] of cases) {
      const answer = await harness.post('/authorize', body);
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body, {
        apiVersion,
        kind: 'SubjectAccessReview',
        status: { allowed: false, evaluationError },
      });
    }
  });

  it('lists the authorize chain in /chain', async () => {
    const chain = (await harness.ops('/chain')).body as { order: string; authorize: Array<Record<string, unknown>> };
    assert.match(chain.order, / authorize=\[secret-guard,broken-fail,broken-ignore\]$/);
    assert.deepEqual(
      chain.authorize.map((s) => [s.name, s.phase, s.failurePolicy]),
      [
        ['secret-guard', 'authorize', 'Fail'],
        ['broken-fail', 'authorize', 'Fail'],
        ['broken-ignore', 'authorize', 'Ignore'],
      ],
    );
  });
});

describe('POST /authorize with a step that does not answer', () => {
  it('forbids after the step’s timeout under Fail, naming the timeout', async () => {
    const harness = await startHarness({
      yaml: `
chain:
  - plugin: broken
    settings: { how: hang }
    timeoutSeconds: 0.05
`,
      plugins: [broken],
    });
    try {
      assert.deepEqual((await harness.post('/authorize', sar(EXEC))).body, {
        apiVersion: V1,
        kind: 'SubjectAccessReview',
        status: { allowed: false, denied: true, reason: 'plugin "broken" failed (timeout): no answer within 50 ms' },
      });
    } finally {
      await harness.close();
    }
  });
});
