import assert from 'node:assert/strict';
import { parseAllDocuments } from 'yaml';
import type { RuleWithOperations } from '../../../server/plugin-api/types.js';
import { renderWebhookConfigurations, type RenderOptions, type RenderStep } from '../../../server/manifests/render.js';
import { toJsonList, toYaml } from '../../../server/manifests/output.js';

const PODS: RuleWithOperations = {
  operations: ['CREATE'],
  apiGroups: [''],
  apiVersions: ['v1'],
  resources: ['pods'],
  scope: 'Namespaced',
};
const CONFIGMAPS: RuleWithOperations = { ...PODS, resources: ['configmaps'] };
const DEPLOYMENTS: RuleWithOperations = {
  operations: ['CREATE', 'UPDATE'],
  apiGroups: ['apps'],
  apiVersions: ['v1'],
  resources: ['deployments'],
  scope: '*',
};

function step(
  name: string,
  phase: RenderStep['phase'],
  rules: RuleWithOperations[],
  extra: Partial<RenderStep> = {},
): RenderStep {
  return {
    name,
    phase,
    // Step selectors are the gateway's business: they must not reach the webhook configuration.
    match: { rules, namespaceSelector: { matchLabels: { team: name } }, objectSelector: { matchLabels: { x: 'y' } } },
    failurePolicy: 'Fail',
    timeoutMs: 10_000,
    sideEffects: 'None',
    reinvocationPolicy: 'Never',
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
  // The version before matchConditions: the tests below are about rules, routes and policies; the
  // exclusions of each version are tested on their own.
  kubeVersion: { major: 1, minor: 29 },
};

const SELECTOR = {
  matchExpressions: [
    { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-node-lease', 'gw-system'] },
    { key: 'admissiongateway.io/exclude', operator: 'DoesNotExist' },
  ],
};

const COMMON = {
  admissionReviewVersions: ['v1', 'v1beta1'],
  sideEffects: 'None',
  timeoutSeconds: 11,
  matchPolicy: 'Equivalent',
  namespaceSelector: SELECTOR,
};

const service = (path: string) => ({
  service: { name: 'gw', namespace: 'gw-system', path, port: 443 },
  caBundle: 'Q0E=',
});

const METADATA = { name: 'admission-gateway', labels: { 'app.kubernetes.io/name': 'admission-gateway' } };

describe('renderWebhookConfigurations()', () => {
  describe('given mutate steps and validate steps of both failure policies', () => {
    const steps = [
      step('labels', 'mutate', [PODS], { failurePolicy: 'Ignore' }),
      step('mirror', 'mutate', [DEPLOYMENTS], { failurePolicy: 'Fail' }),
      step('require', 'validate', [PODS], { failurePolicy: 'Fail' }),
      step('protect', 'validate', [CONFIGMAPS], { failurePolicy: 'Fail' }),
      step('scan', 'validate', [DEPLOYMENTS], { failurePolicy: 'Ignore' }),
    ];

    it('renders one mutating webhook for the whole phase and one validating webhook per failure policy', () => {
      assert.deepEqual(renderWebhookConfigurations(steps, OPTIONS), [
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'MutatingWebhookConfiguration',
          metadata: METADATA,
          webhooks: [
            {
              name: 'mutate.admissiongateway.io',
              ...COMMON,
              failurePolicy: 'Fail',
              reinvocationPolicy: 'Never',
              clientConfig: service('/mutate'),
              rules: [PODS, DEPLOYMENTS],
            },
          ],
        },
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: METADATA,
          webhooks: [
            {
              name: 'validate-fail.admissiongateway.io',
              ...COMMON,
              failurePolicy: 'Fail',
              clientConfig: service('/validate/fail'),
              rules: [{ ...PODS, resources: ['pods', 'configmaps'] }],
            },
            {
              name: 'validate-ignore.admissiongateway.io',
              ...COMMON,
              failurePolicy: 'Ignore',
              clientConfig: service('/validate/ignore'),
              rules: [DEPLOYMENTS],
            },
          ],
        },
      ]);
    });
  });

  it('makes the mutating webhook Ignore when every mutate step is Ignore, IfNeeded when one step is', () => {
    const [mutating] = renderWebhookConfigurations(
      [
        step('a', 'mutate', [PODS], { failurePolicy: 'Ignore' }),
        step('b', 'mutate', [PODS], { failurePolicy: 'Ignore', reinvocationPolicy: 'IfNeeded' }),
      ],
      OPTIONS,
    );
    assert.equal(mutating?.kind, 'MutatingWebhookConfiguration');
    assert.equal(mutating.webhooks[0]?.failurePolicy, 'Ignore');
    assert.equal(mutating.webhooks[0]?.reinvocationPolicy, 'IfNeeded');
  });

  it('leaves out a configuration whose phase has no step, and a validating route without steps', () => {
    const objects = renderWebhookConfigurations(
      [step('scan', 'validate', [PODS], { failurePolicy: 'Ignore' })],
      OPTIONS,
    );
    assert.deepEqual(
      objects.map((o) => [o.kind, o.webhooks.map((w) => w.name)]),
      [['ValidatingWebhookConfiguration', ['validate-ignore.admissiongateway.io']]],
    );
    assert.deepEqual(renderWebhookConfigurations([], OPTIONS), []);
  });

  it('declares NoneOnDryRun when a step has side effects (the gateway skips it on dry-run)', () => {
    const objects = renderWebhookConfigurations(
      [step('a', 'mutate', [PODS]), step('b', 'validate', [PODS], { sideEffects: 'Some' })],
      OPTIONS,
    );
    assert.deepEqual(
      objects.map((o) => o.webhooks[0]?.sideEffects),
      ['None', 'NoneOnDryRun'],
    );
  });

  it('sets timeoutSeconds to the largest step timeout plus the deadline margin, rounded up, at most 30', () => {
    const timeout = (...ms: number[]) =>
      renderWebhookConfigurations(
        ms.map((t, i) => step(`s${i}`, 'validate', [PODS], { timeoutMs: t })),
        OPTIONS,
      )[0]?.webhooks[0]?.timeoutSeconds;
    assert.equal(timeout(2000, 5000), 6);
    assert.equal(timeout(1000), 2);
    assert.equal(timeout(500), 1);
    assert.equal(timeout(30_000), 30);
  });

  it('calls a URL with the route appended', () => {
    const [mutating] = renderWebhookConfigurations([step('a', 'mutate', [PODS])], {
      ...OPTIONS,
      target: { kind: 'url', url: 'https://127.0.0.1:8443' },
    });
    assert.deepEqual(mutating?.webhooks[0]?.clientConfig, { url: 'https://127.0.0.1:8443/mutate', caBundle: 'Q0E=' });
  });

  it('adds required namespace labels and more excluded namespaces to the selector, never dropping the fixed ones', () => {
    const [mutating] = renderWebhookConfigurations([step('a', 'mutate', [PODS])], {
      ...OPTIONS,
      namespaceLabels: { 'e2e.admissiongateway.io/suite': 'x' },
      excludeNamespaces: ['kube-system', 'monitoring'],
    });
    assert.deepEqual(mutating?.webhooks[0]?.namespaceSelector, {
      matchLabels: { 'e2e.admissiongateway.io/suite': 'x' },
      matchExpressions: [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', 'kube-node-lease', 'gw-system', 'monitoring'],
        },
        { key: 'admissiongateway.io/exclude', operator: 'DoesNotExist' },
      ],
    });
  });

  describe('keeps the excluded namespaces out the way each Kubernetes version can', () => {
    const exclusions = (minor: number) => {
      const [mutating] = renderWebhookConfigurations([step('a', 'mutate', [PODS])], {
        ...OPTIONS,
        excludeNamespaces: ['monitoring'],
        kubeVersion: { major: 1, minor },
      });
      const webhook = mutating!.webhooks[0]!;
      return { namespaceSelector: webhook.namespaceSelector, matchConditions: webhook.matchConditions };
    };
    const OPT_OUT = { key: 'admissiongateway.io/exclude', operator: 'DoesNotExist' };

    it('1.30 and later: by name in matchConditions (request.namespace), Leases anywhere, the opt-out label in the selector', () => {
      for (const minor of [30, 37]) {
        assert.deepEqual(exclusions(minor), {
          namespaceSelector: { matchExpressions: [OPT_OUT] },
          matchConditions: [
            {
              name: 'exclude-namespaces',
              expression: "!(request.namespace in ['kube-system', 'kube-node-lease', 'gw-system', 'monitoring'])",
            },
            {
              name: 'exclude-leases',
              expression: "!(request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases')",
            },
          ],
        });
      }
    });

    it('1.21 to 1.29: by the name label the apiserver sets, no matchConditions', () => {
      for (const minor of [21, 29]) {
        assert.deepEqual(exclusions(minor), {
          namespaceSelector: {
            matchExpressions: [
              {
                key: 'kubernetes.io/metadata.name',
                operator: 'NotIn',
                values: ['kube-system', 'kube-node-lease', 'gw-system', 'monitoring'],
              },
              OPT_OUT,
            ],
          },
          matchConditions: undefined,
        });
      }
    });

    it('1.20 and earlier: only the opt-out label, which has no name label to rely on', () => {
      for (const minor of [16, 20]) {
        assert.deepEqual(exclusions(minor), {
          namespaceSelector: { matchExpressions: [OPT_OUT] },
          matchConditions: undefined,
        });
      }
    });
  });

  it('with allResources renders every route with the catch-all rule, steps or not', () => {
    const objects = renderWebhookConfigurations([step('a', 'validate', [PODS], { timeoutMs: 20_000 })], {
      ...OPTIONS,
      allResources: true,
    });
    const catchAll = [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: '*' }];
    assert.deepEqual(
      objects.flatMap((o) => o.webhooks.map((w) => [w.name, w.failurePolicy, w.timeoutSeconds, w.rules])),
      [
        ['mutate.admissiongateway.io', 'Ignore', 11, catchAll],
        ['validate-fail.admissiongateway.io', 'Fail', 21, catchAll],
        ['validate-ignore.admissiongateway.io', 'Ignore', 11, catchAll],
      ],
    );
  });
});

describe('toYaml() and toJsonList()', () => {
  const objects = renderWebhookConfigurations(
    [step('a', 'mutate', [PODS]), step('b', 'validate', [CONFIGMAPS], { failurePolicy: 'Ignore' })],
    { ...OPTIONS, caBundle: '' },
  );

  it('writes a comment header and one YAML document per configuration that parse back to the objects', () => {
    const text = toYaml(objects, ['first line', 'second line']);
    assert.ok(text.startsWith('# first line\n# second line\napiVersion: admissionregistration.k8s.io/v1\n'), text);
    assert.deepEqual(
      parseAllDocuments(text).map((d) => d.toJS() as unknown),
      objects,
    );
    assert.match(text, /^ {4}admissionReviewVersions: \[v1, v1beta1\]$/m);
    // Without a bundle the field is left out, so re-applying keeps the caBundle the gateway patched in.
    assert.doesNotMatch(text, /caBundle/);
  });

  it('writes JSON as one v1 List', () => {
    assert.deepEqual(JSON.parse(toJsonList(objects)), { apiVersion: 'v1', kind: 'List', items: objects });
  });
});
