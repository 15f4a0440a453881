import assert from 'node:assert/strict';
import type { AdmissionResponse, AdmissionReview, KubeObject } from '../../server/admission/types.js';
import { parseExtensionReferences } from '../../server/extensions/extension-references.js';
import type { Labels } from '../../server/steps/label-selector.js';
import type { NamespaceLabelSource } from '../../server/dispatch/reviewer.js';
import type { JsonPatchOperation } from '../../server/plugin-api/index.js';
import { podCreate, podDelete, podUpdate, requestOf } from '../fixtures/reviews/index.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startHarness, type Harness, type LogLine } from '../helpers/gateway-harness.js';
import { applyPatch, decodePatch } from '../helpers/patch.js';
import { createTestPlugins, type TestPlugins } from '../helpers/test-plugins.js';
import { eventually } from '../helpers/wait.js';

const UID = '0df28fbd-5f5f-4c1c-9f5d-3b1d3a4c8e21';
const APPLIED = 'admissiongateway.io/extensions-applied';
const REFERENCES = 'admissiongateway.io/extensions';
const NOT_REFERENCED =
  'attach: OptIn, and neither the object nor its namespace references it in admissiongateway.io/extensions';

/** The response with its patch decoded, so a whole answer can be compared at once. */
function decoded(response: AdmissionResponse): Omit<AdmissionResponse, 'patch'> & { patch?: JsonPatchOperation[] } {
  const { patch, ...rest } = response;
  return patch === undefined ? rest : { ...rest, patch: decodePatch(response) };
}

/** The namespaces a stand-in for cluster mode's cache knows: their annotation, and how often it was asked. */
function namespaces(references: Readonly<Record<string, string>>) {
  const asked = { labels: 0, extensions: 0 };
  const source: NamespaceLabelSource = {
    labels(namespace): Labels {
      asked.labels++;
      return { 'kubernetes.io/metadata.name': namespace };
    },
    extensions(namespace) {
      asked.extensions++;
      return parseExtensionReferences(references[namespace]);
    },
  };
  return { source, asked };
}

/** The Pod fixture in `namespace`, its own annotation set to `references` when given. */
function pod(namespace: string, references?: string, review: AdmissionReview = podCreate()): AdmissionReview {
  const request = requestOf(review);
  request.namespace = namespace;
  const object = (request.object ?? request.oldObject)!;
  object.metadata!.namespace = namespace;
  if (references !== undefined) object.metadata!.annotations = { [REFERENCES]: references };
  return review;
}

const objectOf = (review: AdmissionReview): KubeObject => requestOf(review).object!;

/** The steps of the review line the gateway logged for the nth review of `route` (0-based). */
function reviewLine(logs: readonly LogLine[], route: string, nth = 0): LogLine {
  const line = logs.filter((l) => l.msg === 'review' && l.route === route)[nth];
  assert.ok(line, `no review line ${nth} for ${route}`);
  return line;
}

// team-labels, mesh-a and mesh-b (conflict group mesh) are OptIn mutators, policy an OptIn validator,
// deployments-only an OptIn mutator of Deployments, always a step of every review. Namespace team-a references
// team-labels; team-b references nothing.
const CHAIN = `
chain:
  - { plugin: add-label, name: team-labels, attach: OptIn, settings: { tag: team-labels, labels: { team-labels: applied } } }
  - { plugin: add-label, name: mesh-a, attach: OptIn, conflictGroup: mesh, settings: { tag: mesh-a, labels: { mesh: a } } }
  - { plugin: add-label, name: mesh-b, attach: OptIn, conflictGroup: mesh, settings: { tag: mesh-b, labels: { mesh: b } } }
  - { plugin: validates-only, name: policy, attach: OptIn, settings: { tag: policy } }
  - plugin: add-label
    name: deployments-only
    attach: OptIn
    match: { rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }] }
    settings: { tag: deployments-only, labels: { deployment: 'yes' } }
  - { plugin: records-calls, name: always, settings: { tag: always } }
`;

/** The answer for the fixture Pod (no annotations of its own) when team-labels alone ran for it. */
const TEAM_LABELS_APPLIED = {
  uid: UID,
  allowed: true,
  patchType: 'JSONPatch',
  patch: [
    { op: 'add', path: '/metadata/labels/team-labels', value: 'applied' },
    { op: 'add', path: '/metadata/annotations', value: { [APPLIED]: 'team-labels' } },
  ],
};

describe('opt-in extensions through the real gateway', function () {
  let harness: Harness | undefined;
  let test: TestPlugins;
  let served: string[];
  let asked: { labels: number; extensions: number };
  const fakes: FakeProvider[] = [];

  async function start(yaml: string, references: Record<string, string> = { 'team-a': 'team-labels' }) {
    const stand = namespaces(references);
    asked = stand.asked;
    harness = await startHarness({
      yaml,
      plugins: test.plugins,
      namespaceLabels: stand.source,
      onExtensionServed: (extension) => served.push(extension),
      discovery: { initialBackoffMs: 10, maxBackoffMs: 20 },
    });
    return harness;
  }

  beforeEach(function () {
    test = createTestPlugins();
    served = [];
  });

  afterEach(async function () {
    await harness?.close();
    harness = undefined;
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  describe('who it runs for', function () {
    it('runs nothing opt-in for an object that nothing references, and says why in the review log', async function () {
      const h = await start(CHAIN);

      const review = pod('team-b');
      const mutated = await h.review('/mutate', review);
      const validated = await h.review('/validate', review);

      assert.deepEqual(decoded(mutated.response), { uid: UID, allowed: true });
      assert.deepEqual(decoded(validated.response), { uid: UID, allowed: true });
      assert.deepEqual(test.calls.sequence(), ['always:call', 'always:call']);
      assert.deepEqual(
        (reviewLine(h.logs, 'mutate').steps as Array<{ step: string; outcome: string; reason?: string }>).map((s) => [
          s.step,
          s.outcome,
          s.reason,
        ]),
        [
          ['team-labels', 'skipped', NOT_REFERENCED],
          ['mesh-a', 'skipped', NOT_REFERENCED],
          ['mesh-b', 'skipped', NOT_REFERENCED],
          ['deployments-only', 'skipped', NOT_REFERENCED],
          ['always', 'allowed', undefined],
        ],
      );
      assert.deepEqual(served, []);
    });

    it('runs one for a namespace that references it, and lists it on the object in extensions-applied', async function () {
      const h = await start(CHAIN);

      const review = pod('team-a');
      const mutated = await h.review('/mutate', review);

      assert.deepEqual(decoded(mutated.response), TEAM_LABELS_APPLIED);
      const stored = applyPatch(objectOf(review), decodePatch(mutated.response));
      assert.deepEqual(stored.metadata?.labels, { app: 'web', team: 'payments', 'team-labels': 'applied' });
      assert.deepEqual(stored.metadata?.annotations, { [APPLIED]: 'team-labels' });
      assert.deepEqual(test.calls.sequence(), ['team-labels:call', 'always:call']);
      assert.deepEqual(served, ['team-labels']);
      assert.equal(
        await h.metric('admission_gateway_extension_reviews_total', { extension: 'team-labels', phase: 'mutate' }),
        1,
      );
    });

    it('runs the ones an object references itself, a validating one in the validate phase (not listed)', async function () {
      const h = await start(CHAIN);

      const review = pod('team-b', 'team-labels, policy');
      const mutated = await h.review('/mutate', review);
      const stored = applyPatch(objectOf(review), decodePatch(mutated.response));
      const validated = await h.review('/validate', { ...review, request: { ...requestOf(review), object: stored } });

      assert.deepEqual(decodePatch(mutated.response), [
        { op: 'add', path: '/metadata/labels/team-labels', value: 'applied' },
        { op: 'add', path: '/metadata/annotations/admissiongateway.io~1extensions-applied', value: 'team-labels' },
      ]);
      assert.deepEqual(stored.metadata?.annotations, { [REFERENCES]: 'team-labels, policy', [APPLIED]: 'team-labels' });
      assert.deepEqual(decoded(validated.response), { uid: UID, allowed: true });
      assert.deepEqual(test.calls.sequence(), ['team-labels:call', 'always:call', 'policy:call', 'always:call']);
      // Each extension counts once for the object: a mutating one in the mutate phase, a validating one in validate.
      assert.deepEqual(served, ['team-labels', 'policy']);
      assert.equal(
        await h.metric('admission_gateway_extension_reviews_total', { extension: 'policy', phase: 'validate' }),
        1,
      );
    });

    it('runs a remote provider opt-in, its discovered handlers with it', async function () {
      const fake = await startFakeProvider({
        discovery: { document: { handlers: [{ name: 'patch', phase: 'mutate' }] } },
      });
      fakes.push(fake);
      const h = await start(`
chain:
  - provider: remote
    url: ${fake.url('/hooks')}
    caBundle: ${fake.caBundle}
    discovery: true
    attach: OptIn
    conflictGroup: labellers
`);
      const handler = async () => {
        const chain = JSON.parse((await h.ops('/chain')).text) as { mutate: Array<Record<string, unknown>> };
        return chain.mutate.find((s) => s.name === 'patch.remote');
      };
      await eventually('the handler is discovered', async () => (await handler()) !== undefined);
      const step = (await handler())!;
      assert.deepEqual([step.attach, step.conflictGroup], ['OptIn', 'labellers']);

      const unreferenced = await h.review('/mutate', pod('team-b'));
      const review = pod('team-b', 'remote');
      const referenced = await h.review('/mutate', review);

      assert.deepEqual(decoded(unreferenced.response), { uid: UID, allowed: true });
      assert.deepEqual(decoded(referenced.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [
          { op: 'add', path: '/metadata/labels/provider', value: 'patched' },
          { op: 'add', path: '/metadata/annotations/admissiongateway.io~1extensions-applied', value: 'remote' },
        ],
      });
      assert.equal(fake.reviews().length, 1, 'the provider is called for the object that references it only');
      assert.deepEqual(served, ['remote']);
    });
  });

  describe('extensions-applied is the gateway’s own write', function () {
    it('reinvokes no IfNeeded step, counts as no patch conflict and falls under no declared write set', async function () {
      const h = await start(`
chain:
  - plugin: add-label
    name: team-labels
    attach: OptIn
    supplies: [/metadata/labels/team-labels]
    settings: { tag: team-labels, labels: { team-labels: applied } }
  - { plugin: records-calls, name: again, reinvocationPolicy: IfNeeded, settings: { tag: again } }
`);
      const review = pod('team-a');
      const mutated = await h.review('/mutate', review);

      assert.deepEqual(decoded(mutated.response), TEAM_LABELS_APPLIED);
      assert.deepEqual(test.calls.sequence(), ['team-labels:call', 'again:call']);
    });

    it('lists no extension that failed open, and replaces what a step wrote there', async function () {
      const h = await start(
        `
chain:
  - { plugin: throws, name: broken, attach: OptIn, failurePolicy: Ignore, settings: { tag: broken, labels: { half: done } } }
  - plugin: returns-bad-patch
    name: forger
    settings: { tag: forger, ops: [{ op: add, path: /metadata/annotations, value: { ${APPLIED}: forged } }] }
`,
        { 'team-a': 'broken' },
      );
      const review = pod('team-a');
      const mutated = await h.review('/mutate', review);

      assert.deepEqual(decoded(mutated.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [{ op: 'add', path: '/metadata/annotations', value: {} }],
        warnings: ['broken: failed open (error): boom'],
        auditAnnotations: { 'broken.failed-open': 'error: boom' },
      });
    });

    it('removes a value the object no longer references; never patches a DELETE or a status update', async function () {
      const h = await start(CHAIN);
      // Stored with team-labels applied; the object no longer references it (and team-b never did).
      const update = pod('team-b', undefined, podUpdate());
      objectOf(update).metadata!.annotations = { [APPLIED]: 'team-labels', note: 'kept' };
      requestOf(update).oldObject!.metadata!.annotations = { [APPLIED]: 'team-labels', note: 'kept' };

      const updated = await h.review('/mutate', update);
      const deleted = await h.review('/mutate', pod('team-a', 'team-labels', podDelete()));
      // A status update is not what an extension applied anything to: the value stays as it is.
      const status = structuredClone(update);
      requestOf(status).subResource = 'status';
      const statusUpdated = await h.review('/mutate', status);

      assert.deepEqual(decodePatch(updated.response), [
        { op: 'remove', path: '/metadata/annotations/admissiongateway.io~1extensions-applied' },
      ]);
      assert.deepEqual(applyPatch(objectOf(update), decodePatch(updated.response)).metadata?.annotations, {
        note: 'kept',
      });
      assert.deepEqual(decoded(statusUpdated.response), { uid: requestOf(podUpdate()).uid, allowed: true });
      assert.deepEqual(decoded(deleted.response), { uid: requestOf(podDelete()).uid, allowed: true });
    });
    it('keeps what an earlier write applied while the object references it, and never what a client wrote', async function () {
      const h = await start(`
chain:
  - plugin: add-label
    name: on-create
    attach: OptIn
    match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }] }
    settings: { tag: on-create, labels: { created: 'yes' } }
`);
      // An UPDATE on-create has nothing to do in: the Pod still carries what it applied at CREATE.
      const update = pod('team-b', 'on-create', podUpdate());
      const applied = { [REFERENCES]: 'on-create', [APPLIED]: 'on-create' };
      objectOf(update).metadata!.annotations = { ...applied };
      requestOf(update).oldObject!.metadata!.annotations = { ...applied };
      // A CREATE whose client wrote the value itself, for an extension it does not reference.
      const forged = pod('team-b');
      objectOf(forged).metadata!.annotations = { [APPLIED]: 'on-create' };

      const updated = await h.review('/mutate', update);
      const created = await h.review('/mutate', forged);

      assert.deepEqual(decoded(updated.response), { uid: requestOf(podUpdate()).uid, allowed: true });
      assert.deepEqual(decoded(created.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [{ op: 'remove', path: '/metadata/annotations/admissiongateway.io~1extensions-applied' }],
      });
      assert.deepEqual(test.calls.sequence(), []);
    });
  });

  describe('conflict groups', function () {
    it('refuses an object that references two entries of one group, in either phase, running no step', async function () {
      const h = await start(CHAIN);
      const review = pod('team-b', 'mesh-a,mesh-b');
      const refusal = {
        uid: UID,
        allowed: false,
        status: {
          code: 400,
          reason: 'BadRequest',
          message:
            'the object\'s annotation admissiongateway.io/extensions references "mesh-a" and "mesh-b", both of ' +
            'conflict group "mesh", and one object may use only one entry of a conflict group: keep one of them ' +
            "in the object's admissiongateway.io/extensions",
        },
      };

      assert.deepEqual((await h.review('/mutate', review)).response, refusal);
      assert.deepEqual((await h.review('/validate', review)).response, refusal);
      assert.deepEqual(test.calls.sequence(), []);
      assert.deepEqual(served, []);
    });

    it("applies the object's choice over its namespace's, and says so", async function () {
      const h = await start(CHAIN, { 'team-a': 'mesh-b' });
      const review = pod('team-a', 'mesh-a');

      const mutated = await h.review('/mutate', review);

      assert.deepEqual(decoded(mutated.response), {
        uid: UID,
        allowed: true,
        patchType: 'JSONPatch',
        patch: [
          { op: 'add', path: '/metadata/labels/mesh', value: 'a' },
          { op: 'add', path: '/metadata/annotations/admissiongateway.io~1extensions-applied', value: 'mesh-a' },
        ],
        warnings: [
          'admissiongateway.io/extensions: namespace "team-a" references "mesh-b", which is not applied: the ' +
            'object references "mesh-a" of the same conflict group "mesh", and the object\'s choice wins',
        ],
      });
      assert.deepEqual(test.calls.sequence(), ['mesh-a:call', 'always:call']);
    });
  });

  describe('warnings to the user', function () {
    const WARNINGS = [
      'admissiongateway.io/extensions: the object\'s annotation holds what cannot be read as entry names, ignored: "Mesh_A"; ' +
        'it is read as at most 16 comma-separated names of lower-case letters, digits and "-"',
      'admissiongateway.io/extensions: the object references "team-lables", which is no entry of the gateway\'s chain ' +
        '(did you mean "team-labels"?): nothing runs for it',
      'admissiongateway.io/extensions: the object references "deployments-only", which does not apply to this ' +
        'request: its rules do not select CREATE of v1 pods',
      'admissiongateway.io/extensions: the object references "always", which runs for every request it matches ' +
        '(attach: Always): the reference changes nothing',
    ];

    it('tells about each reference that does nothing, once: in the mutate phase', async function () {
      const h = await start(CHAIN);
      const review = pod('team-b', 'team-lables,Mesh_A,deployments-only,always');

      const mutated = await h.review('/mutate', review);
      const validated = await h.review('/validate', review);

      assert.deepEqual(decoded(mutated.response), { uid: UID, allowed: true, warnings: WARNINGS });
      assert.deepEqual(decoded(validated.response), { uid: UID, allowed: true });
    });

    it('in the validate phase when no mutate step selects the request, on its Fail half when split', async function () {
      const h = await start(`
chain:
  - { plugin: validates-only, name: policy, attach: OptIn, settings: { tag: policy } }
  - { plugin: validates-only, name: lenient, failurePolicy: Ignore, settings: { tag: lenient } }
`);
      const review = pod('team-b', 'polcy');
      const warning =
        'admissiongateway.io/extensions: the object references "polcy", which is no entry of the gateway\'s ' +
        'chain (did you mean "policy"?): nothing runs for it';

      assert.deepEqual((await h.review('/validate', review)).response.warnings, [warning]);
      assert.deepEqual((await h.review('/validate/fail', review)).response.warnings, [warning]);
      assert.equal((await h.review('/validate/ignore', review)).response.warnings, undefined);
    });
  });

  describe('hostile annotations', function () {
    it('reads a bounded part of a huge annotation and answers with bounded warnings', async function () {
      const h = await start(CHAIN);
      const unknown = Array.from({ length: 14 }, (_, i) => `unknown-${i}`).join(',');
      const huge = `team-labels,${unknown},${'X,'.repeat(500_000)}`;

      const mutated = await h.review('/mutate', pod('team-b', huge));

      assert.deepEqual(decodePatch(mutated.response), [
        { op: 'add', path: '/metadata/labels/team-labels', value: 'applied' },
        { op: 'add', path: '/metadata/annotations/admissiongateway.io~1extensions-applied', value: 'team-labels' },
      ]);
      const warnings = mutated.response.warnings ?? [];
      assert.equal(warnings.length, 6);
      assert.match(warnings[0]!, /ignored: "X", "X", "X", "X", "X" \(and \d+ more\)/);
      assert.match(warnings[5]!, /the object references 10 more names that are no entry/);
      assert.ok(warnings.join('').length <= 4096);
    });
  });

  describe('a chain without opt-in entries', function () {
    it("never asks for the namespace's references, and still warns about the object's", async function () {
      const h = await start(`
chain:
  - { plugin: add-label, name: labels, settings: { tag: labels, labels: { x: 'y' } } }
`);
      const plain = await h.review('/mutate', pod('team-a'));
      const referencing = await h.review('/mutate', pod('team-a', 'labels,lables'));

      assert.deepEqual(decodePatch(plain.response), [{ op: 'add', path: '/metadata/labels/x', value: 'y' }]);
      assert.equal(plain.response.warnings, undefined);
      assert.deepEqual(decodePatch(referencing.response), [{ op: 'add', path: '/metadata/labels/x', value: 'y' }]);
      assert.deepEqual(referencing.response.warnings, [
        'admissiongateway.io/extensions: the object references "lables", which is no entry of the gateway\'s ' +
          'chain (did you mean "labels"?): nothing runs for it',
        'admissiongateway.io/extensions: the object references "labels", which runs for every request it ' +
          'matches (attach: Always): the reference changes nothing',
      ]);
      assert.deepEqual(asked, { labels: 0, extensions: 0 });
    });
  });
});
