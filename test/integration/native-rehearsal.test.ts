/**
 * Rehearsing a native policy before it is bound with Deny (README "Rehearse a native policy before you bind it"),
 * through the real gateway and CLI: the decision trace names the binding, the selector requirement a skipped
 * request failed, the deciding expression and the variables it read; `shadow: true` on the entry runs every
 * binding as if bound with Deny after the answer and counts what it would refuse; `replay` of a recording
 * against a candidate that adds the policy file lists what it would newly deny.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AdmissionReview } from '../../server/admission/types.js';
import { runCliCaptured } from '../helpers/cli.js';
import { edited, numberedPodCreate } from '../fixtures/reviews/index.js';
import { reviewOf, startHarness, type Harness } from '../helpers/gateway-harness.js';
import { eventually } from '../helpers/wait.js';

/** A policy with a variable, bound with Warn only (not yet Deny), and bound for canaries only. */
const POLICY = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: { name: pinned-images }
spec:
  matchConstraints:
    resourceRules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
  variables:
    - name: unpinned
      expression: "object.spec.containers.filter(c, !c.image.contains('@sha256:')).map(c, c.name)"
  validations:
    - expression: size(variables.unpinned) == 0
      messageExpression: "'unpinned images in ' + variables.unpinned.join(', ')"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: pinned-images-warn }
spec:
  policyName: pinned-images
  validationActions: [Warn]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: pinned-images-canary }
spec:
  policyName: pinned-images
  validationActions: [Deny]
  matchResources:
    objectSelector: { matchLabels: { tier: canary } }
`;

const PINNED = 'nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31';

function pod(n: number, labels: Record<string, string>, images: readonly string[]): AdmissionReview {
  return edited(numberedPodCreate(n, `web-${n}`, labels), {
    'request.object.spec.containers': images.map((image, i) => ({ name: `c${i}`, image })),
  });
}

describe('rehearsing a native policy before it is bound with Deny', function () {
  this.timeout(30_000);
  let harness: Harness | undefined;
  let dir: string;
  let policies: string;

  before(async function () {
    dir = await mkdtemp(join(tmpdir(), 'rehearsal-'));
    policies = join(dir, 'policies.yaml');
    await writeFile(policies, POLICY);
  });

  after(() => rm(dir, { recursive: true, force: true }));

  afterEach(async function () {
    await harness?.close();
    harness = undefined;
  });

  const entry = (more = ''): string => `  - admissionPolicies: native\n    files: [${policies}]\n${more}`;

  it('explains a binding: the selector requirement that left it out, the expression that decided, its variables', async function () {
    harness = await startHarness({ yaml: `explain: { keep: all, includeObjects: true }\nchain:\n${entry()}` });
    const review = pod(1, { app: 'web' }, [PINNED, 'redis:7']);
    const uid = review.request!.uid;

    const answer = reviewOf(await harness.post('/validate', review));

    assert.deepEqual(answer.response, {
      uid,
      allowed: true,
      warnings: [
        "Validation failed for ValidatingAdmissionPolicy 'pinned-images' with binding 'pinned-images-warn': unpinned images in c1",
      ],
    });
    const trace = (await harness.ops(`/explain/${uid}`)).body as { steps: Array<Record<string, unknown>> };
    const cost = (trace.steps[1]?.policy as { cost?: number } | undefined)?.cost ?? 0;
    assert.ok(cost > 0, `${cost} cost units`);
    assert.deepEqual(
      trace.steps.map((s) => [s.step, s.outcome, s.reason, s.policy]),
      [
        [
          'native/pinned-images/pinned-images-canary',
          'skipped',
          "objectSelector does not match: the object's labels {app=web} fail tier=canary",
          undefined,
        ],
        [
          'native/pinned-images/pinned-images-warn',
          'allowed',
          undefined,
          {
            decidedBy: {
              field: 'validations[0]',
              index: 0,
              expression: 'size(variables.unpinned) == 0',
              result: 'false',
            },
            variables: [{ name: 'unpinned', value: '["c1"]' }],
            cost,
          },
        ],
      ],
    );
  });

  it('runs every binding as if bound with Deny under shadow: true, after the answer, counting what it would refuse', async function () {
    harness = await startHarness({ yaml: `explain: { keep: all }\nchain:\n${entry('    shadow: true\n')}` });
    const unpinned = pod(2, { app: 'web' }, ['redis:7']);
    const pinned = pod(3, { app: 'web' }, [PINNED]);

    const answers = [
      reviewOf(await harness.post('/validate', unpinned)).response,
      reviewOf(await harness.post('/validate', pinned)).response,
    ];

    assert.deepEqual(answers, [
      { uid: unpinned.request!.uid, allowed: true },
      { uid: pinned.request!.uid, allowed: true },
    ]);
    const h = harness;
    const calls = (outcome: string) =>
      h.metric('admission_gateway_shadow_calls_total', { step: 'native/pinned-images/pinned-images-warn', outcome });
    await eventually('the shadow steps have run', async () => (await calls('denied')) + (await calls('allowed')) === 2);
    assert.deepEqual(
      {
        denied: await calls('denied'),
        allowed: await calls('allowed'),
        wouldDeny: await h.metric('admission_gateway_shadow_disagreements_total', {
          step: 'native/pinned-images/pinned-images-warn',
          kind: 'would_deny',
        }),
        live: await h.metric('admission_gateway_step_calls_total', {
          step: 'native/pinned-images/pinned-images-warn',
          phase: 'validate',
          outcome: 'allowed',
        }),
      },
      { denied: 1, allowed: 1, wouldDeny: 1, live: 0 },
    );
    const chain = (await h.ops('/chain')).body as { validate: Array<Record<string, unknown>> };
    assert.deepEqual(
      chain.validate.map((s) => [s.name, s.shadow, s.validationActions]),
      [
        ['native/pinned-images/pinned-images-canary', true, ['Deny']],
        ['native/pinned-images/pinned-images-warn', true, ['Warn']],
      ],
      'listed as shadow steps, with their bindings’ own actions',
    );
  });

  /** Records three reviews, then replays them against a candidate adding the entry (with `more` fields). */
  async function replayCandidate(more = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
    harness = await startHarness({ yaml: 'record: { path: recording.ndjson, sampleRate: 1 }' });
    await harness.review('/validate', pod(4, { app: 'web', tier: 'canary' }, ['redis:7']));
    await harness.review('/validate', pod(5, { app: 'web', tier: 'canary' }, [PINNED]));
    await harness.review('/validate', pod(6, { app: 'web' }, ['redis:7']));
    const dir = harness.dir;
    await harness.gateway.close();
    await writeFile(join(dir, 'candidate.yaml'), `chain:\n${entry(more)}`);
    return runCliCaptured(['replay', 'recording.ndjson', '--config', 'candidate.yaml', '--exit-code'], { cwd: dir });
  }

  const REPLAYED = `replayed 3 reviews of recording.ndjson on candidate.yaml
1 newly denied, 0 newly allowed, 0 with the denial changed, 0 with the patch changed, 1 with the warnings changed, 1 unchanged

newly denied:
  line 1: CREATE Pod team-a/web-4 (validate)
    ValidatingAdmissionPolicy 'pinned-images' with binding 'pinned-images-canary' denied request: unpinned images in c0

with the warnings changed:
  line 3: CREATE Pod team-a/web-6 (validate)
    + Validation failed for ValidatingAdmissionPolicy 'pinned-images' with binding 'pinned-images-warn': unpinned images in c0
`;

  it('replays a recording against a candidate that adds the policy file: what it would newly deny, exit code 3', async function () {
    assert.deepEqual(await replayCandidate(), { code: 3, stderr: '', stdout: REPLAYED });
  });

  it('replays with fromCluster: true on the files alone, and says once that it reads nothing from the cluster', async function () {
    const run = await replayCandidate('    fromCluster: true\n');
    assert.deepEqual(
      {
        ...run,
        stderr: run.stderr
          .trim()
          .split('\n')
          .map((line) => {
            const { level, admissionPolicies, msg } = JSON.parse(line) as Record<string, unknown>;
            return { level, admissionPolicies, msg };
          }),
      },
      {
        code: 3,
        stdout: REPLAYED,
        stderr: [
          {
            level: 'warn',
            admissionPolicies: 'native',
            msg: 'fromCluster: true, but this command reads nothing from the cluster: the entry runs the policies of its files only',
          },
        ],
      },
    );
  });
});
