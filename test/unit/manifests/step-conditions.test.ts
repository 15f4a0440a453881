import assert from 'node:assert/strict';
import { parse } from 'yaml';
import type { RuleWithOperations } from '../../../server/plugin-api/types.js';
import {
  renderWebhookConfigurations,
  stepConditionNotes,
  type RenderOptions,
  type RenderStep,
} from '../../../server/manifests/render.js';
import { toYaml } from '../../../server/manifests/output.js';

const PODS: RuleWithOperations = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

function step(
  name: string,
  conditions: Record<string, string> | undefined,
  extra: Partial<RenderStep> = {},
): RenderStep {
  return {
    name,
    phase: 'validate',
    match: { rules: [PODS] },
    failurePolicy: 'Fail',
    timeoutMs: 10_000,
    sideEffects: 'None',
    reinvocationPolicy: 'Never',
    ...(conditions
      ? { matchConditions: Object.entries(conditions).map(([n, expression]) => ({ name: n, expression })) }
      : {}),
    ...extra,
  };
}

const OPTIONS: RenderOptions = {
  name: 'admission-gateway',
  target: { kind: 'service', namespace: 'gw-system', name: 'gw', port: 443 },
  caBundle: 'Q0E=',
  gatewayNamespace: 'gw-system',
  deadlineMarginMs: 250,
  defaultTimeoutSeconds: 10,
  kubeVersion: { major: 1, minor: 37 },
};

const EXCLUSIONS = [
  { name: 'exclude-namespaces', expression: "!(request.namespace in ['kube-system', 'kube-node-lease', 'gw-system'])" },
  {
    name: 'exclude-leases',
    expression: "!(request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases')",
  },
];

/** The rendered webhooks' names and matchConditions, as the YAML reads back. */
function conditionsOf(steps: RenderStep[], options: RenderOptions = OPTIONS): Array<[string, unknown]> {
  const yaml = toYaml(renderWebhookConfigurations(steps, options), []);
  return yaml
    .split(/^---$/m)
    .map((doc) => parse(doc) as { webhooks?: Array<{ name: string; matchConditions?: unknown }> } | null)
    .flatMap((doc) => doc?.webhooks ?? [])
    .map((w) => [w.name, w.matchConditions]);
}

describe("the steps' matchConditions in the rendered webhooks", () => {
  it("render as one condition, the disjunction of each step's conjunction, after the exclusions", () => {
    const steps = [
      step('a', { prod: "object.metadata.labels.tier == 'prod'", big: 'size(object.spec.containers) > 2' }),
      step('b', { team: "'team' in object.metadata.labels" }),
    ];
    assert.deepEqual(conditionsOf(steps), [
      [
        'validate-fail.admissiongateway.io',
        [
          ...EXCLUSIONS,
          {
            name: 'steps-match',
            expression:
              "((object.metadata.labels.tier == 'prod') && (size(object.spec.containers) > 2)) || (('team' in object.metadata.labels))",
          },
        ],
      ],
    ]);
    assert.deepEqual(stepConditionNotes(steps, OPTIONS), []);
  });

  it('are not rendered before Kubernetes 1.30, nor said to be missing', () => {
    const steps = [step('a', { t: 'true' })];
    const options = { ...OPTIONS, kubeVersion: { major: 1, minor: 29 } } as const;
    assert.deepEqual(conditionsOf(steps, options), [['validate-fail.admissiongateway.io', undefined]]);
    assert.deepEqual(stepConditionNotes(steps, options), []);
  });

  const notRendered: Array<[string, RenderStep[], Partial<RenderOptions>, RegExp]> = [
    [
      'a step behind the webhook has none',
      [step('a', { t: 'true' }), step('b', undefined)],
      {},
      /^validate-fail\.admissiongateway\.io: step "b" has no matchConditions/,
    ],
    [
      'a condition reads namespaceObject, which a webhook condition cannot',
      [step('a', { ns: 'namespaceObject == null' })],
      {},
      /^validate-fail\.admissiongateway\.io: step "a" condition "ns" cannot be a webhook's \(.*namespaceObject/,
    ],
    [
      "the steps' failure policies differ (an error would be settled by the webhook's)",
      [
        step('a', { t: 'true' }, { phase: 'mutate' }),
        step('b', { t: 'true' }, { phase: 'mutate', failurePolicy: 'Ignore' }),
      ],
      {},
      /^mutate\.admissiongateway\.io: its steps' failure policies differ/,
    ],
    [
      'the disjunction is longer than an expression may be',
      Array.from({ length: 12 }, (_, i) => step(`s${i}`, { long: `'${'x'.repeat(9000)}' != ''` })),
      {},
      /^validate-fail\.admissiongateway\.io: the disjunction of its steps' matchConditions is too large/,
    ],
    [
      '--all-resources sends everything',
      [step('a', { t: 'true' })],
      { allResources: true },
      /^validate-fail\.admissiongateway\.io: --all-resources/,
    ],
  ];
  for (const [name, steps, options, note] of notRendered) {
    it(`are not rendered when ${name}, and the command says why`, () => {
      const rendered = conditionsOf(steps, { ...OPTIONS, ...options });
      for (const [, conditions] of rendered) assert.deepEqual(conditions, EXCLUSIONS);
      const notes = stepConditionNotes(steps, { ...OPTIONS, ...options });
      assert.equal(notes.length, 1, notes.join('\n'));
      assert.match(notes[0]!, note);
    });
  }
});
