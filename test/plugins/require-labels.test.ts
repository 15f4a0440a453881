import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import plugin from '../../plugins/require-labels.js';
import { deploymentCreate, podCreate, podDelete, podUpdate, requestOf, setAt } from '../fixtures/reviews/index.js';
import { runPlugin, settingsOf } from '../../server/plugin-testing/index.js';
import { on, type AdmissionRequest } from '../../server/plugin-api/index.js';

/** The user's answer when the plugin refuses: its message, prefixed with the plugin's name. */
const denied = (message: string) => ({ message: `require-labels: ${message}`, code: 403 });

const denialOf = async (request: AdmissionRequest, settings: unknown) =>
  (await runPlugin(plugin, request, { settings })).denial;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The denial for a Pod whose label `team` is `value`, under `values: {team: pattern}`, from a process of its
 * own, killed after `timeoutMs`: a pattern run by backtracking would hold this process's event loop, mocha's
 * timeout with it.
 */
async function denialInOwnProcess(pattern: string, value: string, timeoutMs: number): Promise<unknown> {
  const script = `
    import plugin from './plugins/require-labels.ts';
    import { runPlugin } from './server/plugin-testing/index.ts';
    import { podCreate, requestOf, setAt } from './test/fixtures/reviews/index.ts';
    const request = requestOf(podCreate());
    setAt(request.object, 'metadata.labels.team', ${JSON.stringify(value)});
    const settings = { labels: ['team'], values: { team: ${JSON.stringify(pattern)} } };
    process.stdout.write(JSON.stringify((await runPlugin(plugin, request, { settings })).denial));
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '--eval', script],
    { cwd: ROOT, timeout: timeoutMs },
  ).catch((err: Error & { killed?: boolean; stderr?: string }) => {
    throw new Error(err.killed ? `no answer within ${timeoutMs} ms` : (err.stderr ?? err.message), { cause: err });
  });
  return JSON.parse(stdout);
}

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
        'values.tier: invalid regular expression "(front": missing closing ): `(front` ' +
          '(patterns are RE2 syntax, matched in linear time: no lookaround, no backreferences)',
      ],
      [
        'a pattern only a backtracking engine can run (lookahead)',
        { labels: ['tier'], values: { tier: '(?=front)\\w+' } },
        'values.tier: invalid regular expression "(?=front)\\w+": invalid or unsupported Perl syntax: `(?=` ' +
          '(patterns are RE2 syntax, matched in linear time: no lookaround, no backreferences)',
      ],
      ['a misspelt setting', { label: ['team'] }, 'label: unknown setting (known: labels, values)'],
    ];
    for (const [description, raw, message] of refusals) {
      it(`refuses ${description}`, () => {
        assert.throws(() => settingsOf(plugin, raw), {
          name: 'ConfigError',
          message: `gateway.yaml: chain[0].settings.${message}`,
        });
      });
    }

    it('drops repeated names and compiles each pattern to match whole values', () => {
      const parsed = settingsOf(plugin, { labels: ['team', 'team', 'tier'], values: { tier: 'front|back' } });
      const tier = parsed.values.get('tier');
      assert.deepEqual(
        [parsed.labels, [...parsed.values.keys()], tier?.source],
        [['team', 'tier'], ['tier'], 'front|back'],
      );
      assert.deepEqual(
        ['front', 'back', 'frontback', 'fronts'].map((value) => tier?.matches(value)),
        [true, true, false, false],
      );
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
    it('allows it as it is, without warnings or annotations', async () => {
      const request = requestOf(podCreate());
      const result = await runPlugin(plugin, request, { settings: { labels: ['app', 'team'] } });
      assert.deepEqual(result, {
        allowed: true,
        warnings: [],
        annotations: {},
        patch: [],
        object: request.object,
        steps: [{ phase: 'validate', outcome: 'allowed' }],
      });
    });
  });

  describe('given a Pod missing several required labels', () => {
    it('refuses it, listing every missing label in the configured order in one message', async () => {
      const result = await runPlugin(plugin, requestOf(podCreate()), {
        settings: { labels: ['team', 'cost-center', 'app', 'owner'] },
      });
      assert.deepEqual(
        { ...result, object: undefined },
        {
          allowed: false,
          denial: denied('missing required labels: cost-center, owner'),
          warnings: [],
          annotations: {},
          patch: [],
          object: undefined,
          steps: [{ phase: 'validate', outcome: 'denied' }],
        },
      );
    });
  });

  describe('given a Pod missing one required label', () => {
    it('names it in the singular', async () => {
      const denial = await denialOf(requestOf(podCreate()), { labels: ['cost-center'] });
      assert.deepEqual(denial, denied('missing required label: cost-center'));
    });
  });

  describe('given values patterns', () => {
    it('refuses a value that matches only part of the pattern', async () => {
      const denial = await denialOf(requestOf(podCreate()), { labels: ['team'], values: { team: 'pay' } });
      assert.deepEqual(denial, denied('label team="payments" does not match "pay"'));
    });

    it('allows a value that matches the whole pattern', async () => {
      const result = await runPlugin(plugin, requestOf(podCreate()), {
        settings: { labels: ['team'], values: { team: 'payments|search' } },
      });
      assert.equal(result.allowed, true);
    });

    it('checks a label that is not required only when it is present', async () => {
      const settings = { labels: ['app'], values: { tier: 'frontend|backend' } };
      const absent = await runPlugin(plugin, requestOf(podCreate()), { settings });
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels.tier', 'cache');
      const present = await runPlugin(plugin, request, { settings });
      assert.deepEqual(
        [absent.denial, present.denial],
        [undefined, denied('label tier="cache" does not match "frontend|backend"')],
      );
    });

    it('answers a nested repetition promptly whatever the value: the pattern runs in linear time', async function () {
      this.timeout(60_000);
      // 2^40 ways to split the a's between the two +, each tried by a backtracking engine before it gives up.
      const value = `${'a'.repeat(40)}b`;
      assert.deepEqual(
        await denialInOwnProcess('(a+)+', value, 30_000),
        denied(`label team="${value}" does not match "(a+)+"`),
      );
    });

    it('reports missing and invalid labels together', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels.app', 'Web Server');
      const denial = await denialOf(request, {
        labels: ['app', 'team', 'owner', 'cost-center'],
        values: { app: '[a-z-]+', team: 'team-[a-z]+' },
      });
      assert.deepEqual(
        denial,
        denied(
          'missing required labels: owner, cost-center; label app="Web Server" does not match "[a-z-]+"; ' +
            'label team="payments" does not match "team-[a-z]+"',
        ),
      );
    });
  });

  describe('given a Deployment', () => {
    it('checks the labels of the Deployment itself, not of its pod template', async () => {
      const denial = await denialOf(requestOf(deploymentCreate()), { labels: ['app.kubernetes.io/name', 'team'] });
      assert.deepEqual(denial, denied('missing required label: team'));
    });
  });

  describe('given a DELETE', () => {
    it('allows it, as there is no object to check, even under a match that covers DELETE', async () => {
      const match = on('pods').delete().toMatch();
      const result = await runPlugin(plugin, requestOf(podDelete()), { settings: { labels: ['owner'] }, match });
      assert.deepEqual(
        { allowed: result.allowed, steps: result.steps },
        { allowed: true, steps: [{ phase: 'validate', outcome: 'allowed' }] },
      );
    });
  });

  describe('given an UPDATE', () => {
    it('refuses an existing object that still lacks a label', async () => {
      const denial = await denialOf(requestOf(podUpdate()), { labels: ['owner'] });
      assert.deepEqual(denial, denied('missing required label: owner'));
    });

    it('allows an object being deleted, so its finalizers can be removed', async () => {
      const request = requestOf(podUpdate());
      setAt(request.object, 'metadata.deletionTimestamp', '2024-05-14T10:00:00Z');
      setAt(request.object, 'metadata.finalizers', []);
      const result = await runPlugin(plugin, request, { settings: { labels: ['owner'] } });
      assert.equal(result.allowed, true);
    });
  });

  describe('given missing or null labels', () => {
    it('counts null labels as no labels', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata.labels', null);
      const denial = await denialOf(request, { labels: ['app'] });
      assert.deepEqual(denial, denied('missing required label: app'));
    });

    it('counts every label as missing when metadata is null', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'metadata', null);
      const denial = await denialOf(request, { labels: ['app', 'team'] });
      assert.deepEqual(denial, denied('missing required labels: app, team'));
    });

    it('does not mistake Object.prototype members for labels', async () => {
      const denial = await denialOf(requestOf(podCreate()), { labels: ['constructor', 'toString', '__proto__'] });
      assert.deepEqual(denial, denied('missing required labels: constructor, toString, __proto__'));
    });
  });
});
