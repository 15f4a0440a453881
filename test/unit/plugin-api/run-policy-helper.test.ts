import assert from 'node:assert/strict';
import { reviewOf, runPolicy } from '../../../server/plugin-testing/index.js';

/** A policy entry as gateway.yaml would hold it, parsed. */
const MEMORY_LIMITS = {
  policy: 'memory-limits',
  match: { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] },
  variables: [{ name: 'containers', expression: 'object.spec.containers' }],
  validations: [
    { expression: 'true' },
    {
      expression: 'variables.containers.all(c, c.?resources.?limits.?memory.hasValue())',
      messageExpression:
        "'every container needs a memory limit: ' + variables.containers.filter(c, !c.?resources.?limits.?memory.hasValue()).map(c, c.name).join(', ')",
      reason: 'Forbidden',
    },
  ],
  auditAnnotations: [{ key: 'containers', valueExpression: 'string(size(variables.containers))' }],
};

const pod = (...containers: object[]) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'team-a' },
  spec: { containers },
});

describe('plugin-api/testing runPolicy()', function () {
  it('refuses as the gateway does, and says which validation decided with the values it read', async function () {
    const result = await runPolicy(MEMORY_LIMITS, reviewOf(pod({ name: 'web', image: 'nginx' })));

    assert.deepEqual(result, {
      allowed: false,
      denial: { message: 'memory-limits: every container needs a memory limit: web', code: 403 },
      warnings: [],
      annotations: { 'memory-limits.containers': '1' },
      patch: [],
      object: pod({ name: 'web', image: 'nginx' }),
      steps: [{ phase: 'validate', outcome: 'denied' }],
      policy: {
        decidedBy: {
          field: 'validations[1]',
          index: 1,
          expression: 'variables.containers.all(c, c.?resources.?limits.?memory.hasValue())',
          result: 'false',
          message: 'every container needs a memory limit: web',
          reason: 'Forbidden',
        },
        variables: [{ name: 'containers', value: '[{"name": "web", "image": "nginx"}]' }],
        auditAnnotations: { containers: '1' },
        cost: result.policy?.cost,
      },
    });
  });

  it('allows, and has nothing to name when every validation held', async function () {
    const result = await runPolicy(
      MEMORY_LIMITS,
      reviewOf(pod({ name: 'web', image: 'nginx', resources: { limits: { memory: '1Gi' } } })),
    );
    assert.equal(result.allowed, true);
    assert.equal(result.policy?.decidedBy, undefined);
    assert.deepEqual(result.annotations, { 'memory-limits.containers': '1' });
  });

  it('skips what the match leaves out, and refuses a mistake in an expression as the config reader does', async function () {
    const skipped = await runPolicy(MEMORY_LIMITS, reviewOf(pod(), 'DELETE', { oldObject: pod() }));
    assert.deepEqual(
      [skipped.allowed, skipped.steps, skipped.policy],
      [true, [{ phase: 'validate', outcome: 'skipped', reason: skipped.steps[0]?.reason }], undefined],
    );
    await assert.rejects(
      runPolicy({ ...MEMORY_LIMITS, validations: [{ expression: 'object.spec +' }] }, reviewOf(pod())),
      {
        name: 'ConfigError',
        message: /chain\[0\]\.validations\[0\]\.expression: .* \(at column \d+ of the expression\)/,
      },
    );
  });

  it('applies a mutating policy: its patch decoded, the object as stored, then its validations on that object', async function () {
    const TEAM = {
      policy: 'team-label',
      match: MEMORY_LIMITS.match,
      mutations: [
        {
          patchType: 'JSONPatch',
          jsonPatch: {
            expression:
              '[JSONPatch{op: "add", path: "/metadata/labels", value: {}}, JSONPatch{op: "add", path: "/metadata/labels/team", value: request.namespace}]',
          },
        },
      ],
      validations: [{ expression: "object.metadata.labels.team == 'team-a'", message: 'the team is the namespace' }],
    };

    const result = await runPolicy(TEAM, reviewOf(pod({ name: 'web', image: 'nginx' })));

    assert.deepEqual(result, {
      allowed: true,
      warnings: [],
      annotations: {},
      // The mutate phase's one patch: what changed, as the apiserver receives it.
      patch: [{ op: 'add', path: '/metadata/labels', value: { team: 'team-a' } }],
      object: {
        ...(pod({ name: 'web', image: 'nginx' }) as object),
        metadata: { name: 'web', namespace: 'team-a', labels: { team: 'team-a' } },
      },
      steps: [
        { phase: 'mutate', outcome: 'patched' },
        { phase: 'validate', outcome: 'allowed' },
      ],
      policy: { cost: result.policy?.cost },
    });
  });
});
