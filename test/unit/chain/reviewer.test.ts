import assert from 'node:assert/strict';
import { buildPluginSteps, createChain } from '../../../server/chain/chain.js';
import { createPluginRegistry } from '../../../server/chain/plugin-registry.js';
import { givesReferenceWarnings } from '../../../server/dispatch/reviewer.js';
import { selectionOf } from '../../../server/http/routes.js';
import { parseConfigText } from '../../../server/config/load.js';
import { allow, definePlugin } from '../../../server/plugin-api/index.js';
import { podCreate, requestOf } from '../../fixtures/reviews/index.js';
import { chainReviewer } from '../../helpers/chain-reviewer.js';
import { decodePatch, patchedObject } from '../../helpers/patch.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };

/** A reviewer of the chain `chain` (gateway.yaml's `chain:` value) made of `plugins`. */
function reviewerOf(chain: string, plugins: Parameters<typeof createPluginRegistry>[0]) {
  const config = parseConfigText(`chain: ${chain}`, 'gateway.yaml', '/');
  return chainReviewer(createChain(buildPluginSteps(config.chain, createPluginRegistry(plugins), config.file)));
}

describe('createReviewer()', () => {
  describe('a large review takes turns with other work', () => {
    /** What happened, in order: each step's call, and other work that got a turn. */
    let events: string[];
    const marks = definePlugin({
      name: 'marks',
      match: everything,
      settings: (raw) => String((raw as { tag?: unknown } | undefined)?.tag),
      setup: (tag) => ({
        mutate({ object }) {
          events.push(tag);
          // Other work that becomes ready while the step runs, as an ordinary review arriving would.
          setImmediate(() => events.push(`other work after ${tag}`));
          (object.metadata ??= {}).annotations = { [tag]: 'yes' };
        },
      }),
    });

    const reviewer = () =>
      reviewerOf(
        '[{ plugin: marks, name: first, settings: { tag: first } }, { plugin: marks, name: second, settings: { tag: second } }]',
        [marks],
      );

    beforeEach(() => {
      events = [];
    });

    it('lets other work run between its steps and before its diff', async () => {
      const { response } = await reviewer().review(requestOf(podCreate()), selectionOf('mutate'), { large: true });

      assert.equal(response.allowed, true);
      assert.deepEqual(events, ['first', 'other work after first', 'second', 'other work after second']);
    });

    it('an ordinary review runs straight through', async () => {
      const { response } = await reviewer().review(requestOf(podCreate()), selectionOf('mutate'));
      events.push('answered');
      await new Promise((resolve) => setImmediate(resolve));

      assert.equal(response.allowed, true);
      assert.deepEqual(events, ['first', 'second', 'answered', 'other work after first', 'other work after second']);
    });
  });

  describe('givesReferenceWarnings(): the warnings about references are given once per request', () => {
    const podRule = "{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }";
    const deploymentRule = '{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }';
    const mutator = definePlugin({ name: 'mutator', match: everything, setup: () => ({ mutate: () => undefined }) });
    const validator = definePlugin({
      name: 'validator',
      match: everything,
      setup: () => ({ validate: () => allow() }),
    });
    const chainOf = (yaml: string) => {
      const config = parseConfigText(yaml, 'gateway.yaml', '/');
      return createChain(buildPluginSteps(config.chain, createPluginRegistry([mutator, validator]), config.file));
    };
    const routes = ['mutate', 'mutate/fail', 'mutate/ignore', 'validate', 'validate/fail', 'validate/ignore'] as const;
    const givers = (yaml: string) => {
      const chain = chainOf(yaml);
      return routes.filter((route) => givesReferenceWarnings(chain, requestOf(podCreate()), selectionOf(route)));
    };

    it('by the mutate phase when a mutate step selects the request, by its Fail half when split', () => {
      const chain = `chain: [{ plugin: mutator, match: { rules: [${podRule}] } }, { plugin: validator }]`;
      assert.deepEqual(givers(chain), ['mutate', 'mutate/fail']);
    });

    it("by the Ignore half when no Fail step's rules select the request", () => {
      const chain = `
chain:
  - { plugin: mutator, name: fail-deployments, match: { rules: [${deploymentRule}] } }
  - { plugin: mutator, name: ignore-pods, failurePolicy: Ignore, match: { rules: [${podRule}] } }
`;
      assert.deepEqual(givers(chain), ['mutate', 'mutate/fail', 'mutate/ignore']);
    });

    it("by the validate phase when no mutate step's rules select the request (its webhook is not called)", () => {
      // The mutate routes of a chain without mutate steps are never registered.
      assert.deepEqual(givers('chain: [{ plugin: validator }]'), routes.slice(0, 5));
      const deploymentsOnly = `chain: [{ plugin: mutator, match: { rules: [${deploymentRule}] } }, { plugin: validator, mode: warn }]`;
      assert.deepEqual(givers(deploymentsOnly), routes);
    });
  });

  describe('a step that fails after editing a large array, its failure ignored', () => {
    const trims = definePlugin({
      name: 'trims',
      match: everything,
      setup: () => ({
        mutate({ object }) {
          (object.spec as { tolerations: unknown[] }).tolerations.pop();
          throw new Error('gave up half way');
        },
      }),
    });
    const labels = definePlugin({
      name: 'labels',
      match: everything,
      setup: () => ({
        mutate({ object }) {
          (object.metadata!.labels ??= {}).checked = 'yes';
        },
      }),
    });

    it('is rolled back, array and all, and the review goes on to the next step', async () => {
      const reviewer = reviewerOf('[{ plugin: trims, failurePolicy: Ignore }, { plugin: labels }]', [trims, labels]);
      // More elements than a call takes as arguments: restoring the array one argument each overflowed the stack.
      const tolerations = Array.from({ length: 300_000 }, (_, i) => ({ key: `k${i}`, operator: 'Exists' }));
      const request = requestOf(podCreate());
      (request.object!.spec as Record<string, unknown>).tolerations = tolerations;
      const original = structuredClone(request.object);

      const { response } = await reviewer.review(request, selectionOf('mutate'));

      // Only the second step's label: the first step's pop() left nothing behind, and its failure is told.
      const { patch: _patch, ...rest } = response;
      assert.deepEqual(rest, {
        uid: request.uid,
        allowed: true,
        patchType: 'JSONPatch',
        warnings: ['trims: failed open (error): gave up half way'],
        auditAnnotations: { 'trims.failed-open': 'error: gave up half way' },
      });
      assert.deepEqual(decodePatch(response), [{ op: 'add', path: '/metadata/labels/checked', value: 'yes' }]);
      assert.deepEqual(patchedObject(original!, response), {
        ...original,
        metadata: { ...original!.metadata, labels: { app: 'web', team: 'payments', checked: 'yes' } },
      });
      assert.deepEqual(request.object, original);
    });
  });
});
