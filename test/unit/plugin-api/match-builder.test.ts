import assert from 'node:assert/strict';
import { POD_SPEC_RESOURCES } from '../../helpers/pod-resources.js';
import {
  MatchDefinitionError,
  definePlugin,
  on,
  podSpecResources,
  type KubeObject,
  type Plugin,
} from '../../../server/plugin-api/index.js';
import { matches, reviewOf } from '../../../server/plugin-testing/index.js';

/** The plain JSON a webhook configuration would hold. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('the match builder', () => {
  describe('on(...resources)', () => {
    it('writes one rule with the operations named, the built-in groups filled in and every version', () => {
      assert.deepEqual(plain(on('deployments', 'statefulsets').create().update().toMatch()), {
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: ['apps'],
            apiVersions: ['*'],
            resources: ['deployments', 'statefulsets'],
          },
        ],
      });
    });

    it('lists the groups once each, in the order their resources are named', () => {
      const match = on('pods', 'deployments', 'statefulsets', 'jobs', 'services').create().toMatch();
      assert.deepEqual(match.rules[0]?.apiGroups, ['', 'apps', 'batch']);
    });

    it("takes a subresource in its parent's group", () => {
      const match = on('pods', 'pods/ephemeralcontainers').update().toMatch();
      assert.deepEqual(plain(match.rules[0]), {
        operations: ['UPDATE'],
        apiGroups: [''],
        apiVersions: ['*'],
        resources: ['pods', 'pods/ephemeralcontainers'],
      });
    });

    it('makes every resource of every group out of "*"', () => {
      assert.deepEqual(plain(on('*').anyOperation().toMatch()), {
        rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
      });
    });

    it('keeps each operation once, in the order first named', () => {
      assert.deepEqual(on('pods').update().create().update().toMatch().rules[0]?.operations, ['UPDATE', 'CREATE']);
    });

    it('takes groups, versions and scope for the rule, instead of the inferred ones', () => {
      const match = on('widgets').groups('acme.io').versions('v1', 'v1beta1').scope('Namespaced').delete().toMatch();
      assert.deepEqual(plain(match), {
        rules: [
          {
            operations: ['DELETE'],
            apiGroups: ['acme.io'],
            apiVersions: ['v1', 'v1beta1'],
            resources: ['widgets'],
            scope: 'Namespaced',
          },
        ],
      });
    });

    it('adds the rules of another builder with or(), and keeps one set of selectors', () => {
      const match = on('configmaps')
        .delete()
        .namespaceSelector({ matchLabels: { env: 'prod' } })
        .or(on('secrets').delete())
        .objectSelector({ matchExpressions: [{ key: 'protected', operator: 'Exists' }] })
        .toMatch();
      assert.deepEqual(plain(match), {
        rules: [
          { operations: ['DELETE'], apiGroups: [''], apiVersions: ['*'], resources: ['configmaps'] },
          { operations: ['DELETE'], apiGroups: [''], apiVersions: ['*'], resources: ['secrets'] },
        ],
        namespaceSelector: { matchLabels: { env: 'prod' } },
        objectSelector: { matchExpressions: [{ key: 'protected', operator: 'Exists' }] },
      });
    });

    it('leaves every builder it was made from as it was', () => {
      const base = on('pods').create();
      base
        .update()
        .groups('x')
        .namespaceSelector({ matchLabels: { a: 'b' } });
      assert.deepEqual(plain(base.toMatch()), {
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['*'], resources: ['pods'] }],
      });
    });
  });

  describe('podSpecResources(...extra)', () => {
    it('matches Pods and every workload that templates one, in the core, apps and batch groups', () => {
      assert.deepEqual(plain(podSpecResources('pods/ephemeralcontainers').create().update().toMatch()), {
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: ['', 'apps', 'batch'],
            apiVersions: ['*'],
            resources: [...POD_SPEC_RESOURCES, 'pods/ephemeralcontainers'],
          },
        ],
      });
    });
  });

  describe('mistakes, refused when the plugin module is loaded', () => {
    it('refuses a rule without an operation, naming it', () => {
      assert.throws(() => on('pods').toMatch(), {
        name: 'MatchDefinitionError',
        message: 'rule 1 (pods) has no operation: add .create(), .update(), .delete(), .connect()',
      });
    });

    it('refuses a custom resource whose group was not given', () => {
      assert.throws(
        () => definePlugin({ name: 'x', match: on('pods').create().or(on('widgets').create()), setup: () => ({}) }),
        (err: unknown) =>
          err instanceof MatchDefinitionError &&
          err.message ===
            'rule 2 (widgets): "widgets" is not a built-in resource, so its API group is unknown: add .groups(\'your.group\')',
      );
    });
  });

  describe('what the gateway makes of it', () => {
    const plugin: Plugin<undefined, KubeObject> = definePlugin({
      name: 'watch-deployments',
      match: on('deployments')
        .create()
        .namespaceSelector({ matchLabels: { env: 'prod' } }),
      setup: () => ({}),
    });
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } };

    it('sees a Deployment created in a matching namespace', () => {
      assert.equal(matches(plugin, reviewOf(deployment), { namespaceLabels: { env: 'prod' } }), true);
    });

    it('does not see it in another namespace, on UPDATE, or in the extensions group', () => {
      assert.equal(matches(plugin, reviewOf(deployment), { namespaceLabels: { env: 'dev' } }), false);
      assert.equal(
        matches(plugin, reviewOf(deployment, 'UPDATE', { oldObject: deployment }), {
          namespaceLabels: { env: 'prod' },
        }),
        false,
      );
      const legacy = { ...deployment, apiVersion: 'extensions/v1beta1' };
      assert.equal(matches(plugin, reviewOf(legacy), { namespaceLabels: { env: 'prod' } }), false);
    });
  });
});
