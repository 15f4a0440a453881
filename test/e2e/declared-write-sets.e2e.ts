import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { apiError, core, createNamespace, plain, randomSuffix, readStatus, statusOf, warningTexts } from './cluster.js';
import { webAndAgentPod } from './objects.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { getChain } from './http.js';
import { ORDER_ANNOTATION, SEEN_ANNOTATION_PREFIX } from './plugins.js';

const SUITE = 'declared-write-sets';
const MIRRORED_NGINX = 'mirror.e2e.example/dockerhub/library/nginx:1.25';
const OUTLAW_LABEL = 'e2e-outlaw';
const POD_RULES = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];

/**
 * One lane of mutating steps, for the Pods of one namespace: default-labels twice (labels and an annotation,
 * then another annotation: both create the annotations the Pod does not have), resource-defaults, image-policy's
 * mirror, the fake provider's `/patch` (label `provider: patched`) and record-order, which reads what the others
 * write. `declared`: each says what it writes and reads, so the first five share a level and record-order runs
 * after them; otherwise every step is a barrier, run one after another.
 */
function lane(namespace: string, suffix: string, fake: FakeProvider, declared: boolean): object[] {
  const match = {
    rules: POD_RULES,
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
  };
  const declare = (supplies: string[], dependsOn?: string[]) =>
    declared ? { supplies, ...(dependsOn ? { dependsOn } : {}) } : {};
  return [
    {
      plugin: 'default-labels',
      name: `labels${suffix}`,
      match,
      settings: {
        labels: { 'admissiongateway.io/admitted': 'true', tier: 'e2e' },
        annotations: { 'admissiongateway.io/owner': 'platform' },
      },
      ...declare([
        '/metadata/labels/admissiongateway.io~1admitted',
        '/metadata/labels/tier',
        '/metadata/annotations/admissiongateway.io~1owner',
      ]),
    },
    {
      plugin: 'default-labels',
      name: `cost${suffix}`,
      match,
      settings: { annotations: { 'cost-center': 'shared' } },
      ...declare(['/metadata/annotations/cost-center']),
    },
    {
      plugin: 'resource-defaults',
      name: `resources${suffix}`,
      match,
      settings: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } },
      ...declare(['/spec/containers/*/resources', '/spec/initContainers/*/resources']),
    },
    {
      plugin: 'image-policy',
      name: `mirror${suffix}`,
      match,
      settings: { mirrors: { 'docker.io': 'mirror.e2e.example/dockerhub' } },
      ...declare(['/spec/containers/*/image', '/spec/initContainers/*/image']),
    },
    {
      provider: `patcher${suffix}`,
      url: fake.url(`/${namespace}/patch`),
      caBundle: fake.caBundle,
      phases: ['mutate'],
      timeoutSeconds: 5,
      match,
      ...declare(['/metadata/labels/provider']),
    },
    {
      plugin: 'record-order',
      name: `seen${suffix}`,
      match,
      settings: { token: 'seen' },
      ...declare(
        [`/metadata/annotations/${pointerKey(ORDER_ANNOTATION)}`, `/metadata/annotations/${pointerKey(SEEN)}`],
        [
          '/metadata/labels',
          '/spec/containers/0/image',
          '/spec/containers/0/resources/requests/cpu',
          `/metadata/annotations/${pointerKey(ORDER_ANNOTATION)}`,
        ],
      ),
    },
  ];
}

const SEEN = `${SEEN_ANNOTATION_PREFIX}seen`;
const pointerKey = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Steps for Pods labelled `e2e-outlaw` (in any of the file's namespaces): two default-labels entries that write
 * the label `x` besides the one their `supplies` name, with failurePolicy Fail and Ignore, and a neighbour that
 * keeps to its lane. The three share a level.
 */
function outlaws(): object[] {
  const match = (value?: string) => ({
    rules: POD_RULES,
    objectSelector: value
      ? { matchLabels: { [OUTLAW_LABEL]: value } }
      : { matchExpressions: [{ key: OUTLAW_LABEL, operator: 'Exists' }] },
  });
  return [
    {
      plugin: 'default-labels',
      name: 'outlaw-fail',
      failurePolicy: 'Fail',
      match: match('fail'),
      settings: { labels: { x: 'yes', y: 'yes' } },
      supplies: ['/metadata/labels/y'],
    },
    {
      plugin: 'default-labels',
      name: 'outlaw-ignore',
      failurePolicy: 'Ignore',
      match: match('ignore'),
      settings: { labels: { x: 'yes', z: 'yes' } },
      supplies: ['/metadata/labels/z'],
    },
    {
      plugin: 'default-labels',
      name: 'neighbour',
      match: match(),
      settings: { labels: { neighbour: 'yes' } },
      supplies: ['/metadata/labels/neighbour'],
    },
  ];
}

/** A stored Pod without what differs between any two stored objects (namespace, uid, versions, times). */
function content(stored: V1Pod): unknown {
  const copy = plain(stored) as V1Pod;
  const {
    namespace: _ns,
    uid: _uid,
    resourceVersion: _rv,
    creationTimestamp: _ct,
    managedFields: _mf,
    selfLink: _sl,
    ...metadata
  } = copy.metadata ?? {};
  return { ...copy, metadata };
}

describe('declared write sets through a real kube-apiserver', function () {
  let fake: FakeProvider;
  let gw: E2EGateway | undefined;
  let declaredNamespace: string;
  let serialNamespace: string;

  before(async function () {
    fake = await startFakeProvider();
    // The lanes select their namespace by name, so the namespaces exist before the gateway's config is written.
    declaredNamespace = await createNamespace(SUITE);
    serialNamespace = await createNamespace(SUITE);
    gw = await startE2EGateway({
      suite: SUITE,
      chain: stringify([
        ...lane(declaredNamespace, '', fake, true),
        ...lane(serialNamespace, '-serial', fake, false),
        ...outlaws(),
      ]),
      mutating: [{ name: 'mutate', route: 'mutate', timeoutSeconds: 10, rules: POD_RULES }],
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await fake?.close();
  });

  it('runs the declared steps side by side in /chain', async function () {
    const chain = await getChain(gw!.gateway.opsUrl);
    assert.equal(
      chain.order,
      'mutate=[{labels,cost,resources,mirror,patcher},seen,' +
        'labels-serial,cost-serial,resources-serial,mirror-serial,patcher-serial,seen-serial,' +
        '{outlaw-fail,outlaw-ignore,neighbour},e2e-probe-fail,e2e-probe-ignore] validate=[mirror,mirror-serial,e2e-probe-fail,e2e-probe-ignore]',
    );
    assert.deepEqual(
      chain.mutate.map((s) => [s.name, s.level]),
      [
        ['labels', 0],
        ['cost', 0],
        ['resources', 0],
        ['mirror', 0],
        ['patcher', 0],
        ['seen', 1],
        ['labels-serial', 2],
        ['cost-serial', 3],
        ['resources-serial', 4],
        ['mirror-serial', 5],
        ['patcher-serial', 6],
        ['seen-serial', 7],
        ['outlaw-fail', 8],
        ['outlaw-ignore', 8],
        ['neighbour', 8],
        ['e2e-probe-fail', 9],
        ['e2e-probe-ignore', 10],
      ],
    );
    assert.deepEqual(chain.mutate.find((s) => s.name === 'patcher')?.supplies, ['/metadata/labels/provider']);
    assert.equal(chain.mutate.find((s) => s.name === 'patcher-serial')?.supplies, undefined);
    assert.equal(chain.problems, undefined);
  });

  it('stores the Pod the same chain without declarations stores', async function () {
    const name = `pod-${randomSuffix()}`;
    await core().createNamespacedPod({ namespace: declaredNamespace, body: webAndAgentPod(name, { app: 'web' }) });
    await core().createNamespacedPod({ namespace: serialNamespace, body: webAndAgentPod(name, { app: 'web' }) });
    const declared = await core().readNamespacedPod({ name, namespace: declaredNamespace });
    const serial = await core().readNamespacedPod({ name, namespace: serialNamespace });

    assert.deepEqual(content(declared), content(serial));
    // And what both stored is every step's work, record-order having seen the other steps' results.
    assert.deepEqual(declared.metadata?.labels, {
      app: 'web',
      'admissiongateway.io/admitted': 'true',
      tier: 'e2e',
      provider: 'patched',
    });
    assert.deepEqual(declared.metadata?.annotations, {
      'admissiongateway.io/owner': 'platform',
      'cost-center': 'shared',
      [ORDER_ANNOTATION]: 'seen',
      [SEEN]: `image=${MIRRORED_NGINX};cpu=100m;labels=admissiongateway.io/admitted|app|provider|tier`,
    });
    assert.deepEqual(
      declared.spec?.containers.map((c) => [c.image, plain(c.resources)]),
      [
        [MIRRORED_NGINX, { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } }],
        [
          'quay.io/acme/agent:v2',
          { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
        ],
      ],
    );

    // The provider is sent the object as its level began: in the declared lane, without its level-mates' work.
    const sent = (namespace: string) => {
      const calls = fake.reviews().filter((c) => c.path === `/${namespace}/patch`);
      assert.equal(calls.length, 1, namespace);
      const object = calls[0]!.object as V1Pod;
      return {
        labels: object.metadata?.labels,
        annotations: object.metadata?.annotations,
        image: object.spec?.containers[0]?.image,
      };
    };
    assert.deepEqual(sent(declaredNamespace), { labels: { app: 'web' }, annotations: undefined, image: 'nginx:1.25' });
    assert.deepEqual(sent(serialNamespace), {
      labels: { app: 'web', 'admissiongateway.io/admitted': 'true', tier: 'e2e' },
      annotations: { 'admissiongateway.io/owner': 'platform', 'cost-center': 'shared' },
      image: MIRRORED_NGINX,
    });
  });

  it('refuses the Pod when a Fail step writes outside its supplies, naming the step, the path and the supplies', async function () {
    const namespace = await gw!.namespace();
    const name = `outlaw-fail-${randomSuffix()}`;
    const err = await apiError(
      core().createNamespacedPod({ namespace, body: webAndAgentPod(name, { [OUTLAW_LABEL]: 'fail' }) }),
    );

    assert.equal(err.code, 500);
    assert.equal(
      statusOf(err).message,
      `admission webhook "${gw!.webhookName('mutate')}" denied the request: ` +
        'plugin "outlaw-fail" failed (write_outside_supplies): wrote /metadata/labels/x, outside its supplies (/metadata/labels/y)',
    );
    assert.equal(await readStatus(() => core().readNamespacedPod({ name, namespace })), 404);
  });

  it('stores the Pod without an Ignore step’s writes when it writes outside its supplies, with a warning', async function () {
    const namespace = await gw!.namespace();
    const name = `outlaw-ignore-${randomSuffix()}`;
    const { headers } = await core().createNamespacedPodWithHttpInfo({
      namespace,
      body: webAndAgentPod(name, { [OUTLAW_LABEL]: 'ignore' }),
    });

    assert.deepEqual(warningTexts(headers), [
      'outlaw-ignore: failed open (write_outside_supplies): wrote /metadata/labels/x, outside its supplies (/metadata/labels/z)',
    ]);
    const stored = await core().readNamespacedPod({ name, namespace });
    // Neither `x` nor `z`, which was inside its lane: its copy is discarded whole. Its level-mate's label stays.
    assert.deepEqual(stored.metadata?.labels, { [OUTLAW_LABEL]: 'ignore', neighbour: 'yes' });
  });

  it('counts the writes outside supplies in /metrics', async function () {
    const text = await gw!.metrics();
    const outside = (step: string) => metricValue(text, 'admission_gateway_writes_outside_supplies_total', { step });
    assert.deepEqual([outside('outlaw-fail'), outside('outlaw-ignore'), outside('neighbour')], [1, 1, undefined]);
    assert.equal(metricValue(text, 'admission_gateway_fail_open_total', { step: 'outlaw-ignore' }), 1);
    const calls = (step: string, outcome: string) =>
      metricValue(text, 'admission_gateway_step_calls_total', { step, phase: 'mutate', outcome });
    assert.deepEqual([calls('outlaw-fail', 'error'), calls('outlaw-ignore', 'error')], [1, 1]);
    // The refused Pod's review ended at outlaw-fail, before its level-mate after it in chain order settled.
    assert.equal(calls('neighbour', 'patched'), 1);
  });
});
