import assert from 'node:assert/strict';
import plugin from '../../plugins/default-labels.js';
import { edited, namespaceCreate, podCreate, podUpdate, requestOf, setAt } from '../fixtures/reviews/index.js';
import { runPlugin, settingsOf } from '../../server/plugin-testing/index.js';

const settings = {
  labels: { 'app.kubernetes.io/managed-by': 'admission-gateway', team: 'platform' },
  annotations: { 'acme.io/cost-center': 'cc-100' },
};

describe('default-labels', () => {
  describe('settings', () => {
    const refusals: ReadonlyArray<[string, unknown, string]> = [
      ['no settings at all', undefined, 'settings: expected labels or annotations (or both) with at least one entry'],
      [
        'empty maps',
        { labels: {}, annotations: {} },
        'settings: expected labels or annotations (or both) with at least one entry',
      ],
      [
        'only overwrite',
        { overwrite: true },
        'settings: expected labels or annotations (or both) with at least one entry',
      ],
      [
        'a label value that is not a string',
        { labels: { team: 1 } },
        'settings.labels.team: expected a string, got number 1',
      ],
      ['labels given as a list', { labels: ['team'] }, 'settings.labels: expected a map of strings, got a list'],
      [
        'an invalid label key',
        { labels: { 'Team Name': 'x' } },
        'settings.labels.Team Name: expected a key [prefix/]name, the name up to 63 letters, digits, "-", "_" or "." starting' +
          ' and ending alphanumeric, the prefix a DNS subdomain',
      ],
      [
        'a label key with an invalid prefix',
        { labels: { 'Acme_IO/team': 'x' } },
        'settings.labels.Acme_IO/team: expected a key [prefix/]name, the name up to 63 letters, digits, "-", "_" or "."' +
          ' starting and ending alphanumeric, the prefix a DNS subdomain',
      ],
      [
        'an invalid label value',
        { labels: { team: 'platform team' } },
        'settings.labels.team: expected a label value of up to 63 letters, digits, "-", "_" or "." starting and ending' +
          ' alphanumeric, got "platform team"',
      ],
      [
        'an invalid annotation key',
        { annotations: { '-note': 'x' } },
        'settings.annotations.-note: expected a key [prefix/]name, the name up to 63 letters, digits, "-", "_" or "."' +
          ' starting and ending alphanumeric, the prefix a DNS subdomain',
      ],
      [
        'a non-boolean overwrite',
        { labels: { a: 'b' }, overwrite: 'yes' },
        'settings.overwrite: expected true or false, got string "yes"',
      ],
      [
        'a misspelt setting',
        { labels: { a: 'b' }, overwirte: true },
        'settings.overwirte: unknown setting (known: labels, annotations, overwrite)',
      ],
    ];
    for (const [description, raw, message] of refusals) {
      it(`refuses ${description}`, () => {
        assert.throws(() => settingsOf(plugin, raw), {
          name: 'ConfigError',
          message: `gateway.yaml: chain[0].${message}`,
        });
      });
    }

    it('accepts annotation values of any form and label values that are empty', () => {
      assert.deepEqual(settingsOf(plugin, { labels: { tier: '' }, annotations: { note: 'Owned by: Platform!' } }), {
        labels: { tier: '' },
        annotations: { note: 'Owned by: Platform!' },
        overwrite: false,
      });
    });
  });

  describe('default match', () => {
    it('sees CREATE and UPDATE of every resource', () => {
      assert.deepEqual(plugin.match, {
        rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
      });
    });
  });

  describe('given a Pod with labels and no annotations', () => {
    it('adds the missing labels, keeps the values the user set and creates the annotations map', async () => {
      const request = requestOf(podCreate());
      const result = await runPlugin(plugin, request, { settings });
      assert.deepEqual(
        result.object,
        edited(request.object, {
          'metadata.labels': { app: 'web', team: 'payments', 'app.kubernetes.io/managed-by': 'admission-gateway' },
          'metadata.annotations': { 'acme.io/cost-center': 'cc-100' },
        }),
      );
    });

    it('answers with one patch of two operations, and no warning or annotation', async () => {
      const result = await runPlugin(plugin, requestOf(podCreate()), { settings });
      assert.deepEqual(
        { ...result, object: undefined },
        {
          allowed: true,
          warnings: [],
          annotations: {},
          patch: [
            { op: 'add', path: '/metadata/labels/app.kubernetes.io~1managed-by', value: 'admission-gateway' },
            { op: 'add', path: '/metadata/annotations', value: { 'acme.io/cost-center': 'cc-100' } },
          ],
          object: undefined,
          steps: [{ phase: 'mutate', outcome: 'patched' }],
        },
      );
    });

    it('replaces the values the user set when overwrite is true', async () => {
      const request = requestOf(podCreate());
      const result = await runPlugin(plugin, request, { settings: { ...settings, overwrite: true } });
      assert.deepEqual(
        result.object,
        edited(request.object, {
          'metadata.labels': { app: 'web', team: 'platform', 'app.kubernetes.io/managed-by': 'admission-gateway' },
          'metadata.annotations': { 'acme.io/cost-center': 'cc-100' },
        }),
      );
    });

    it('keeps an empty value the user set, because it is still a value', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels.team', '');
      const result = await runPlugin(plugin, request, { settings: { labels: { team: 'platform' } } });
      assert.deepEqual(result.object?.metadata?.labels, { app: 'web', team: '' });
    });
  });

  describe('given a Pod without labels', () => {
    it('creates the labels map with every configured label', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels', undefined);
      const result = await runPlugin(plugin, request, { settings: { labels: settings.labels } });
      assert.deepEqual(result.object, edited(request.object, { 'metadata.labels': settings.labels }));
    });
  });

  describe('given an object without metadata', () => {
    it('creates metadata with the labels and annotations', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata', undefined);
      const result = await runPlugin(plugin, request, { settings });
      assert.deepEqual(result.object, { ...request.object, metadata: settings });
    });
  });

  describe('given an UPDATE that removes a configured label', () => {
    it('adds it back', async () => {
      const request = requestOf(podUpdate());
      setAt(request.oldObject, 'metadata.labels.team', 'platform');
      const result = await runPlugin(plugin, request, { settings: { labels: { team: 'platform' } } });
      assert.deepEqual(result.object?.metadata?.labels, { app: 'web', team: 'payments', release: 'stable' });
    });
  });

  describe('given a cluster-scoped Namespace', () => {
    it('labels it like any other object', async () => {
      const request = requestOf(namespaceCreate());
      const result = await runPlugin(plugin, request, { settings: { labels: { team: 'platform' } } });
      assert.deepEqual(
        result.object,
        edited(request.object, {
          'metadata.labels': { 'pod-security.kubernetes.io/enforce': 'baseline', team: 'platform' },
        }),
      );
    });
  });

  describe('given malformed metadata', () => {
    it('leaves a labels list alone and still adds the annotations', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels', ['app=web']);
      const result = await runPlugin(plugin, request, { settings });
      assert.deepEqual(result.object, edited(request.object, { 'metadata.annotations': settings.annotations }));
    });

    it('replaces null maps as if they were absent', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels', null);
      const result = await runPlugin(plugin, request, { settings: { labels: { team: 'platform' } } });
      assert.deepEqual(result.object, edited(request.object, { 'metadata.labels': { team: 'platform' } }));
    });

    it('leaves metadata that is not a map alone', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata', 'web');
      const result = await runPlugin(plugin, request, { settings });
      assert.deepEqual(result.object, request.object);
    });
  });
});
