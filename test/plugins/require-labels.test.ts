import assert from 'node:assert/strict';
import plugin from '../../plugins/require-labels.js';
import { deploymentCreate, podCreate, podDelete, podUpdate, requestOf, setAt } from '../fixtures/reviews/index.js';
import { parseSettings, runValidate } from '../helpers/plugin-context.js';

const denied = (message: string) => ({ allowed: false, message, code: 403 });

describe('require-labels', () => {
  describe('settings', () => {
    const refusals: ReadonlyArray<[string, unknown, string]> = [
      ['no settings at all', undefined, 'labels: expected a non-empty list of label names, e.g. [team]'],
      ['an empty list', { labels: [] }, 'labels: expected a non-empty list of label names, e.g. [team]'],
      ['a single name instead of a list', { labels: 'team' }, 'labels: expected a list of strings, got string "team"'],
      ['a name that is not a string', { labels: ['team', 7] }, 'labels[1]: expected a string, got number 7'],
      ['an empty name', { labels: ['team', ''] }, 'labels[1]: expected a label name, got ""'],
      [
        'a pattern that is not a string',
        { labels: ['tier'], values: { tier: 3 } },
        'values.tier: expected a string, got number 3',
      ],
      [
        'an invalid regular expression',
        { labels: ['tier'], values: { tier: '(front' } },
        'values.tier: invalid regular expression "(front": Unterminated group',
      ],
      ['a misspelt setting', { label: ['team'] }, 'label: unknown setting (known: labels, values)'],
    ];
    for (const [description, raw, message] of refusals) {
      it(`refuses ${description}`, () => {
        assert.throws(() => parseSettings(plugin, raw), { name: 'SettingsError', message });
      });
    }

    it('drops repeated names and compiles each pattern to match whole values', () => {
      const parsed = parseSettings(plugin, { labels: ['team', 'team', 'tier'], values: { tier: 'front|back' } });
      assert.deepEqual(parsed, {
        labels: ['team', 'tier'],
        values: new Map([['tier', { pattern: 'front|back', regex: /^(?:front|back)$/ }]]),
      });
    });
  });

  describe('default match', () => {
    it('sees CREATE and UPDATE of pods, workloads and services', () => {
      assert.deepEqual(plugin.match, {
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: ['', 'apps', 'batch'],
            apiVersions: ['*'],
            resources: [
              'pods',
              'deployments',
              'statefulsets',
              'daemonsets',
              'replicasets',
              'jobs',
              'cronjobs',
              'services',
            ],
          },
        ],
      });
    });
  });

  describe('given a Pod with every required label', () => {
    it('allows it without warnings', async () => {
      const result = await runValidate(plugin, requestOf(podCreate()), { labels: ['app', 'team'] });
      assert.deepEqual(result, { verdict: { allowed: true }, warnings: [], annotations: {} });
    });
  });

  describe('given a Pod missing several required labels', () => {
    it('lists every missing label, in the configured order, in one message', async () => {
      const result = await runValidate(plugin, requestOf(podCreate()), {
        labels: ['team', 'cost-center', 'app', 'owner'],
      });
      assert.deepEqual(result.verdict, denied('missing required labels: cost-center, owner'));
    });
  });

  describe('given a Pod missing one required label', () => {
    it('names it in the singular', async () => {
      const result = await runValidate(plugin, requestOf(podCreate()), { labels: ['cost-center'] });
      assert.deepEqual(result.verdict, denied('missing required label: cost-center'));
    });
  });

  describe('given values patterns', () => {
    it('refuses a value that matches only part of the pattern', async () => {
      const result = await runValidate(plugin, requestOf(podCreate()), { labels: ['team'], values: { team: 'pay' } });
      assert.deepEqual(result.verdict, denied('label team="payments" does not match "pay"'));
    });

    it('allows a value that matches the whole pattern', async () => {
      const result = await runValidate(plugin, requestOf(podCreate()), {
        labels: ['team'],
        values: { team: 'payments|search' },
      });
      assert.deepEqual(result.verdict, { allowed: true });
    });

    it('checks a label that is not required only when it is present', async () => {
      const raw = { labels: ['app'], values: { tier: 'frontend|backend' } };
      const absent = await runValidate(plugin, requestOf(podCreate()), raw);
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels.tier', 'cache');
      const present = await runValidate(plugin, request, raw);
      assert.deepEqual(
        [absent.verdict, present.verdict],
        [{ allowed: true }, denied('label tier="cache" does not match "frontend|backend"')],
      );
    });

    it('reports missing and invalid labels together', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels.app', 'Web Server');
      const result = await runValidate(plugin, request, {
        labels: ['app', 'team', 'owner', 'cost-center'],
        values: { app: '[a-z-]+', team: 'team-[a-z]+' },
      });
      assert.deepEqual(
        result.verdict,
        denied(
          'missing required labels: owner, cost-center; label app="Web Server" does not match "[a-z-]+"; ' +
            'label team="payments" does not match "team-[a-z]+"',
        ),
      );
    });
  });

  describe('given a Deployment', () => {
    it('checks the labels of the Deployment itself, not of its pod template', async () => {
      const result = await runValidate(plugin, requestOf(deploymentCreate()), {
        labels: ['app.kubernetes.io/name', 'team'],
      });
      assert.deepEqual(result.verdict, denied('missing required label: team'));
    });
  });

  describe('given a DELETE', () => {
    it('allows it, as there is no object to check', async () => {
      const result = await runValidate(plugin, requestOf(podDelete()), { labels: ['owner'] });
      assert.deepEqual(result.verdict, { allowed: true });
    });
  });

  describe('given an UPDATE', () => {
    it('refuses an existing object that still lacks a label', async () => {
      const result = await runValidate(plugin, requestOf(podUpdate()), { labels: ['owner'] });
      assert.deepEqual(result.verdict, denied('missing required label: owner'));
    });

    it('allows an object being deleted, so its finalizers can be removed', async () => {
      const request = requestOf(podUpdate());
      setAt(request.object, 'metadata.deletionTimestamp', '2024-05-14T10:00:00Z');
      setAt(request.object, 'metadata.finalizers', []);
      const result = await runValidate(plugin, request, { labels: ['owner'] });
      assert.deepEqual(result.verdict, { allowed: true });
    });
  });

  describe('given malformed labels', () => {
    it('counts labels that are not a map as missing', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels', ['app=web']);
      const result = await runValidate(plugin, request, { labels: ['app'] });
      assert.deepEqual(result.verdict, denied('missing required label: app'));
    });

    it('counts a value that is not a string as missing', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels.app', 42);
      const result = await runValidate(plugin, request, { labels: ['app'], values: { app: '.*' } });
      assert.deepEqual(result.verdict, denied('missing required label: app'));
    });

    it('does not mistake Object.prototype members for labels', async () => {
      const result = await runValidate(plugin, requestOf(podCreate()), { labels: ['constructor', 'toString'] });
      assert.deepEqual(result.verdict, denied('missing required labels: constructor, toString'));
    });

    it('counts every label as missing when metadata is not a map', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata', null);
      const result = await runValidate(plugin, request, { labels: ['app', 'team'] });
      assert.deepEqual(result.verdict, denied('missing required labels: app, team'));
    });
  });
});
