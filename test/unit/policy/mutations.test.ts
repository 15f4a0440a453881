import assert from 'node:assert/strict';
import type { AdmissionRequest, AdmissionResponse, KubeObject } from '../../../server/admission/types.js';
import { runMutations } from '../../../server/policy/mutations.js';
import { LOG_SHIPPER_CHAIN, TEAM_LABEL_CHAIN } from '../../fixtures/mutation-policies.js';
import { chainAnswer } from '../../helpers/chain-answer.js';
import { parseConfig } from '../../helpers/config.js';
import { applyPatch, decodePatch } from '../../helpers/patch.js';
import { deploymentCreate, edited, podCreate, requestOf } from '../../fixtures/reviews/index.js';

const PODS = "{ rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }] }";
const DEPLOYMENTS =
  '{ rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }] }';

/** The mutate route's answer to `request` with a chain of the policy entries written in `chain` (YAML). */
const mutate = (chain: string, request: AdmissionRequest = requestOf(podCreate())): Promise<AdmissionResponse> =>
  chainAnswer(chain, request, 'mutate');

/** A policy entry named `name` for Pods with `body` (YAML, indented six spaces) after its match. */
const policy = (name: string, body: string, match = PODS): string =>
  `  - policy: ${name}\n    match: ${match}\n${body}`;

const jsonPatch = (expression: string): string =>
  `    mutations:\n      - patchType: JSONPatch\n        jsonPatch:\n          expression: ${JSON.stringify(expression)}\n`;

const applyConfiguration = (expression: string): string =>
  `    mutations:\n      - patchType: ApplyConfiguration\n        applyConfiguration:\n          expression: ${JSON.stringify(expression)}\n`;

/** The answer's patch, decoded, and the object it makes of the request's. */
function patchOf(response: AdmissionResponse, request: AdmissionRequest): { ops: unknown; object: KubeObject } {
  assert.equal(response.allowed, true, JSON.stringify(response.status));
  const ops = decodePatch(response);
  return { ops, object: applyPatch(request.object!, ops) };
}

/** The patch the mutate route answers for `chain` on `request` (a Pod's creation unless given), and the object it makes. */
async function patched(
  chain: string,
  request: AdmissionRequest = requestOf(podCreate()),
): Promise<{ ops: unknown; object: KubeObject }> {
  return patchOf(await mutate(chain, request), request);
}

describe('policy mutations', () => {
  describe('patchType JSONPatch', () => {
    it('adds a label whose key needs escaping, with jsonpatch.escapeKey', async () => {
      const { ops, object } = await patched(
        policy(
          'owner',
          jsonPatch(
            '[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("acme.io/owner~team"), value: object.metadata.labels.team}]',
          ),
        ),
      );
      assert.deepEqual(ops, [{ op: 'add', path: '/metadata/labels/acme.io~1owner~0team', value: 'payments' }]);
      assert.deepEqual(object.metadata?.labels, { app: 'web', team: 'payments', 'acme.io/owner~team': 'payments' });
    });

    it('appends an init container built with Object.spec.initContainers{…}', async () => {
      const { ops, object } = await patched(
        policy(
          'mesh',
          jsonPatch(
            '[JSONPatch{op: "add", path: "/spec/initContainers", value: []}, JSONPatch{op: "add", path: "/spec/initContainers/-", value: Object.spec.initContainers{name: "mesh-proxy", image: "mesh/proxy:1.0", args: ["proxy"], restartPolicy: "Always"}}]',
          ),
        ),
      );
      const container = { name: 'mesh-proxy', image: 'mesh/proxy:1.0', args: ['proxy'], restartPolicy: 'Always' };
      assert.deepEqual(ops, [{ op: 'add', path: '/spec/initContainers', value: [container] }]);
      assert.deepEqual((object.spec as { initContainers: unknown }).initContainers, [container]);
    });

    it('changes nothing, and does not fail, when its test operation does not hold (as the apiserver)', async () => {
      const response = await mutate(
        policy(
          'guarded',
          jsonPatch(
            '[JSONPatch{op: "test", path: "/metadata/labels/team", value: "other"}, JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]',
          ),
        ),
      );
      assert.deepEqual(
        { allowed: response.allowed, patch: response.patch, warnings: response.warnings },
        { allowed: true, patch: undefined, warnings: undefined },
      );
    });

    it('applies the operations after a test operation that holds', async () => {
      const { ops } = await patched(
        policy(
          'guarded',
          jsonPatch(
            '[JSONPatch{op: "test", path: "/metadata/labels/team", value: "payments"}, JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]',
          ),
        ),
      );
      assert.deepEqual(ops, [{ op: 'add', path: '/metadata/labels/x', value: 'y' }]);
    });

    it('fails under its failurePolicy when an operation does not apply', async () => {
      const body = jsonPatch('[JSONPatch{op: "remove", path: "/metadata/annotations/missing"}]');
      const refused = await mutate(policy('remover', body));
      assert.deepEqual(refused.status, {
        code: 500,
        reason: 'InternalError',
        message:
          'policy "remover" failed (invalid_patch): mutations[0].jsonPatch.expression: operation 0 (remove /metadata/annotations/missing) does not apply: /metadata/annotations/missing: nothing at "annotations"',
      });
      const ignored = await mutate(policy('remover', `    failurePolicy: Ignore\n${body}`));
      assert.equal(ignored.allowed, true);
      assert.equal(ignored.patch, undefined);
      assert.match(ignored.warnings?.[0] ?? '', /^remover: failed open \(invalid_patch\)/);
    });
  });

  describe('patchType ApplyConfiguration', () => {
    it('sets an optional field (?name:) only when its optional has a value', async () => {
      const chain = policy(
        'priority',
        applyConfiguration(
          'Object{spec: Object.spec{?priorityClassName: object.metadata.?annotations[?"acme.io/priority"]}}',
        ),
      );
      const annotated = requestOf(
        edited(podCreate(), { 'request.object.metadata.annotations': { 'acme.io/priority': 'high' } }),
      );

      const { ops } = await patched(chain, annotated);
      const plain = await mutate(chain);

      assert.deepEqual(ops, [{ op: 'add', path: '/spec/priorityClassName', value: 'high' }]);
      assert.deepEqual([plain.allowed, plain.patch], [true, undefined]);
    });

    it('merges containers by name, env by name and maps field by field', async () => {
      const { ops, object } = await patched(
        policy(
          'defaults',
          applyConfiguration(
            'Object{metadata: Object.metadata{labels: {"tier": "frontend"}}, spec: Object.spec{containers: [Object.spec.containers{name: "log-shipper", env: [Object.spec.containers.env{name: "LEVEL", value: "info"}], resources: Object.spec.containers.resources{limits: {"memory": "64Mi"}}}, Object.spec.containers{name: "web", image: "nginx:1.25.4"}]}}',
          ),
        ),
      );
      assert.deepEqual(ops, [
        { op: 'add', path: '/metadata/labels/tier', value: 'frontend' },
        { op: 'add', path: '/spec/containers/1/env', value: [{ name: 'LEVEL', value: 'info' }] },
        { op: 'add', path: '/spec/containers/1/resources/limits', value: { memory: '64Mi' } },
        { op: 'replace', path: '/spec/containers/0/image', value: 'nginx:1.25.4' },
      ]);
      const spec = object.spec as { containers: Array<Record<string, unknown>> };
      assert.deepEqual(
        spec.containers.map((c) => [c.name, c.image, c.env, c.resources]),
        [
          ['web', 'nginx:1.25.4', undefined, { requests: { cpu: '250m' }, limits: { memory: '256Mi' } }],
          [
            'log-shipper',
            'ghcr.io/acme/log-shipper:2.1.0',
            [{ name: 'LEVEL', value: 'info' }],
            { limits: { memory: '64Mi' } },
          ],
        ],
      );
      assert.deepEqual(object.metadata?.labels, { app: 'web', team: 'payments', tier: 'frontend' });
    });

    it("adds a container by a name the list does not have at its end, in a Deployment's pod template", async () => {
      const { ops, object } = await patched(
        policy(
          'sidecar',
          applyConfiguration(
            'Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "sidecar", image: "sidecar:1"}]}}}}',
          ),
          DEPLOYMENTS,
        ),
        requestOf(deploymentCreate()),
      );
      assert.deepEqual(ops, [
        { op: 'add', path: '/spec/template/spec/containers/1', value: { name: 'sidecar', image: 'sidecar:1' } },
      ]);
      const containers = (object as { spec: { template: { spec: { containers: Array<{ name: string }> } } } }).spec
        .template.spec.containers;
      assert.deepEqual(containers.at(-1), { name: 'sidecar', image: 'sidecar:1' });
    });

    it('refuses to set an atomic list, as the apiserver, under its failurePolicy', async () => {
      const response = await mutate(
        policy(
          'args',
          applyConfiguration(
            'Object{spec: Object.spec{containers: [Object.spec.containers{name: "web", args: ["-v"]}]}}',
          ),
        ),
      );
      assert.deepEqual(response.status, {
        code: 500,
        reason: 'InternalError',
        message:
          'policy "args" failed (invalid_patch): mutations[0].applyConfiguration.expression: may not mutate atomic arrays, maps or structs: .spec.containers[0].args',
      });
    });
  });

  it('runs its mutations in order, each on the object the one before left', async () => {
    const { object } = await patched(
      policy(
        'two',
        '    mutations:\n' +
          '      - patchType: ApplyConfiguration\n' +
          '        applyConfiguration: { expression: \'Object{metadata: Object.metadata{labels: {"step": "one"}}}\' }\n' +
          '      - patchType: JSONPatch\n' +
          '        jsonPatch: { expression: \'[JSONPatch{op: "add", path: "/metadata/labels/copy", value: object.metadata.labels.step}]\' }\n',
      ),
    );
    assert.deepEqual(object.metadata?.labels, {
      app: 'web',
      team: 'payments',
      step: 'one',
      copy: 'one',
    });
  });

  it('in mode warn changes nothing and says what it would have changed', async () => {
    const response = await mutate(
      policy('quiet', `    mode: warn\n${jsonPatch('[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]')}`),
    );
    assert.deepEqual(
      { allowed: response.allowed, patch: response.patch, warnings: response.warnings },
      {
        allowed: true,
        patch: undefined,
        warnings: ['quiet: would patch add /metadata/labels/x (mode warn: not applied)'],
      },
    );
  });

  it('fails with cost_exceeded when a mutation spends more than its budget', async () => {
    const response = await mutate(
      policy(
        'costly',
        jsonPatch(
          '[JSONPatch{op: "add", path: "/metadata/labels/n", value: string(lists.range(2000).map(i, lists.range(2000).map(j, i * j).size()).size())}]',
        ),
      ),
    );
    assert.equal(response.allowed, false);
    assert.match(
      response.status?.message ?? '',
      /^policy "costly" failed \(cost_exceeded\): mutations\[0\]\.jsonPatch\.expression:/,
    );
  });

  it('has nothing to say when a matchCondition is false', async () => {
    const response = await mutate(
      policy(
        'skipped',
        `    matchConditions: [{ name: never, expression: "false" }]\n${jsonPatch('[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]')}`,
      ),
    );
    assert.deepEqual({ allowed: response.allowed, patch: response.patch }, { allowed: true, patch: undefined });
  });
});

describe("the README's example mutating policies", () => {
  it('team-label (JSONPatch) labels a Pod with its namespace, creating the labels map when there is none', async () => {
    const request = requestOf(podCreate());
    delete request.object!.metadata!.labels;
    const { ops, object } = await patched(TEAM_LABEL_CHAIN, request);
    assert.deepEqual(ops, [{ op: 'add', path: '/metadata/labels', value: { 'acme.io/team': 'team-a' } }]);
    assert.deepEqual(object.metadata?.labels, { 'acme.io/team': 'team-a' });
  });

  it('log-shipper (ApplyConfiguration) merges into the container of that name, keeping what it has', async () => {
    const request = requestOf(podCreate());
    request.object!.metadata!.annotations = { 'acme.io/ship-logs': 'true' };
    const { ops, object } = await patched(LOG_SHIPPER_CHAIN, request);
    assert.deepEqual(ops, [{ op: 'add', path: '/spec/containers/1/env', value: [{ name: 'POD_NAME', value: 'web' }] }]);
    const shipper = (object.spec as { containers: Array<Record<string, unknown>> }).containers[1]!;
    assert.deepEqual(
      [shipper.name, shipper.args, shipper.env],
      ['log-shipper', ['--input=/var/log/nginx', '--output=loki:3100'], [{ name: 'POD_NAME', value: 'web' }]],
    );
  });
});

describe('a mutating policy with declared write sets', () => {
  const label = jsonPatch('[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]');

  it('applies what it writes inside its supplies', async () => {
    const { ops } = await patched(policy('declared', `    supplies: [/metadata/labels/x]\n${label}`));
    assert.deepEqual(ops, [{ op: 'add', path: '/metadata/labels/x', value: 'y' }]);
  });

  it('fails with write_outside_supplies when it writes elsewhere', async () => {
    const response = await mutate(policy('declared', `    supplies: [/metadata/annotations]\n${label}`));
    assert.deepEqual(response.status, {
      code: 500,
      reason: 'InternalError',
      message:
        'policy "declared" failed (write_outside_supplies): wrote /metadata/labels/x, outside its supplies (/metadata/annotations)',
    });
  });
});

describe('a mutating policy with reinvocationPolicy IfNeeded', () => {
  const copy = (reinvocation: string): string =>
    policy(
      'copy',
      `    reinvocationPolicy: ${reinvocation}\n${jsonPatch('[JSONPatch{op: "add", path: "/metadata/labels/copy", value: object.metadata.labels.?src.orValue("none")}]')}`,
    ) + policy('source', jsonPatch('[JSONPatch{op: "add", path: "/metadata/labels/src", value: "set-later"}]'));

  it('runs again when a later step changed the object, and sees the change', async () => {
    const { object } = await patched(copy('IfNeeded'));
    assert.deepEqual(object.metadata?.labels, { app: 'web', team: 'payments', copy: 'set-later', src: 'set-later' });
  });

  it('with Never, keeps what it saw', async () => {
    const { object } = await patched(copy('Never'));
    assert.deepEqual(object.metadata?.labels, { app: 'web', team: 'payments', copy: 'none', src: 'set-later' });
  });
});

describe('runMutations()', () => {
  it('leaves the object it was given as it was, however many mutations edit it', () => {
    const [entry] = parseConfig(
      `chain:\n${policy(
        'edits',
        '    mutations:\n' +
          '      - patchType: JSONPatch\n' +
          '        jsonPatch: { expression: \'[JSONPatch{op: "add", path: "/spec/containers/-", value: {"name": "x"}}, JSONPatch{op: "remove", path: "/metadata/labels/app"}]\' }\n' +
          '      - patchType: ApplyConfiguration\n' +
          '        applyConfiguration: { expression: \'Object{spec: Object.spec{containers: [Object.spec.containers{name: "x", image: "y"}, Object.spec.containers{name: "web", image: "z"}]}}\' }\n',
      )}`,
    ).chain;
    assert.ok(entry?.kind === 'policy');
    const request = requestOf(podCreate());
    const before = structuredClone(request.object);
    const ops = runMutations(entry.spec, { request, plainObject: request.object! });
    assert.deepEqual(request.object, before);
    assert.ok(Array.isArray(ops));
    const after = applyPatch(request.object!, ops);
    assert.deepEqual(
      [
        (after.spec as { containers: Array<{ name: string; image?: string }> }).containers.map((c) => [
          c.name,
          c.image,
        ]),
        after.metadata?.labels,
      ],
      [
        [
          ['web', 'z'],
          ['log-shipper', 'ghcr.io/acme/log-shipper:2.1.0'],
          ['x', 'y'],
        ],
        { team: 'payments' },
      ],
    );
  });
});

describe('runMutations() for a MutatingAdmissionPolicy (params, onFailure)', () => {
  const [entry] = parseConfig(
    `chain:\n${policy(
      'three',
      '    mutations:\n' +
        '      - patchType: JSONPatch\n' +
        '        jsonPatch: { expression: \'[JSONPatch{op: "add", path: "/metadata/labels/a", value: object.spec.nope}]\' }\n' +
        '      - patchType: JSONPatch\n' +
        '        jsonPatch: { expression: \'[JSONPatch{op: "remove", path: "/metadata/labels/nope"}]\' }\n' +
        '      - patchType: JSONPatch\n' +
        '        jsonPatch: { expression: \'[JSONPatch{op: "add", path: "/metadata/labels/team", value: params.data.team}]\' }\n',
    )}`,
  ).chain;
  assert.ok(entry?.kind === 'policy');
  const request = requestOf(podCreate());
  const params = { data: { team: 'search' } };

  it('without onFailure, ends at the first failure', () => {
    const result = runMutations(entry.spec, { request, plainObject: request.object! }, { params });
    assert.ok(!Array.isArray(result));
    assert.equal(result.message, 'mutations[0].jsonPatch.expression: No such key: nope (at column 70)');
  });

  it('with onFailure, hands each failure on and runs the later mutations, reading params', () => {
    const failures: unknown[] = [];
    const ops = runMutations(
      entry.spec,
      { request, plainObject: request.object! },
      {
        params,
        onFailure: (f) => failures.push([f.index, f.evaluation?.reason ?? 'applied', f.detail]),
      },
    );
    assert.deepEqual(ops, [{ op: 'add', path: '/metadata/labels/team', value: 'search' }]);
    assert.deepEqual(failures, [
      [0, 'error', 'No such key: nope'],
      [1, 'applied', 'operation 0 (remove /metadata/labels/nope) does not apply: /metadata/labels/nope does not exist'],
    ]);
  });
});
