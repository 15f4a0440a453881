import assert from 'node:assert/strict';
import plugin, { RESTRICTED_LABEL } from '../../plugins/access-guard.js';
import type { AdmissionRequest } from '../../server/plugin-api/index.js';
import { authorizeWith, matches, runPlugin, settingsOf } from '../../server/plugin-testing/index.js';

const RESTRICTED = { 'kubernetes.io/metadata.name': 'vault', [RESTRICTED_LABEL]: 'true' };
const OPEN = { 'kubernetes.io/metadata.name': 'web' };
const SETTINGS = { allowedGroups: ['vault-admins'] };

/** A CONNECT request for a session into Pod `web` of `namespace`, as the apiserver sends it. */
function session(
  subResource: string,
  groups: string[] = ['system:authenticated'],
  namespace = 'vault',
): AdmissionRequest {
  return {
    uid: '0b6c3c0e-4f1d-4d47-9c53-2a1f7b3c9e11',
    kind: {
      group: '',
      version: 'v1',
      kind: subResource === 'portforward' ? 'PodPortForwardOptions' : 'PodExecOptions',
    },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource,
    requestKind: { group: '', version: 'v1', kind: 'PodExecOptions' },
    requestResource: { group: '', version: 'v1', resource: 'pods' },
    requestSubResource: subResource,
    name: 'web',
    namespace,
    operation: 'CONNECT',
    userInfo: { username: 'alice', groups },
    object: { apiVersion: 'v1', kind: 'PodExecOptions', command: ['sh'], container: 'app', stdin: true, tty: true },
    oldObject: null,
    dryRun: false,
    options: null,
  };
}

describe('access-guard', () => {
  describe('settings', () => {
    it('takes none: nobody may read the Secrets of, or open sessions into, a restricted namespace', () => {
      assert.deepEqual(settingsOf(plugin, undefined), {
        allowedGroups: new Set(),
        clusterWideReads: 'forbid',
        shareableLabel: undefined,
      });
    });

    const refusals: ReadonlyArray<[string, unknown, string]> = [
      ['a group that is not a string', { allowedGroups: [7] }, 'allowedGroups[0]: expected a string, got number 7'],
      ['an empty group', { allowedGroups: [''] }, 'allowedGroups[0]: expected a group name, got ""'],
      [
        'another clusterWideReads',
        { clusterWideReads: 'warn' },
        'clusterWideReads: expected one of forbid, allow, got string "warn"',
      ],
      [
        'a misspelt setting',
        { allowedGroup: ['x'] },
        'allowedGroup: unknown setting (known: allowedGroups, clusterWideReads, shareableLabel)',
      ],
      [
        'a shareable label that is no label key',
        { shareableLabel: 'a b' },
        'shareableLabel: expected a label key, got "a b"',
      ],
    ];
    for (const [description, raw, message] of refusals) {
      it(`refuses ${description}`, () => {
        assert.throws(() => settingsOf(plugin, raw), {
          name: 'ConfigError',
          message: `gateway.yaml: chain[0].settings.${message}`,
        });
      });
    }
  });

  describe('reading Secrets (authorize)', () => {
    const read = (verb: string, namespace: string, groups?: string[]) => ({
      verb,
      resource: 'secrets',
      namespace,
      ...(verb === 'get' ? { name: 'db' } : {}),
      ...(groups ? { groups } : {}),
    });

    for (const verb of ['get', 'list', 'watch']) {
      it(`forbids ${verb} in a restricted namespace, naming who may`, async () => {
        assert.deepEqual(
          await authorizeWith(plugin, read(verb, 'vault'), { settings: SETTINGS, namespaceLabels: RESTRICTED }),
          {
            denied: true,
            reason: `access-guard: namespace vault is restricted (${RESTRICTED_LABEL}=true): only members of vault-admins may read its Secrets`,
          },
        );
      });
    }

    it('says nobody may when no group is allowed', async () => {
      assert.deepEqual(await authorizeWith(plugin, read('get', 'vault'), { namespaceLabels: RESTRICTED }), {
        denied: true,
        reason: `access-guard: namespace vault is restricted (${RESTRICTED_LABEL}=true): nobody may read its Secrets`,
      });
    });

    it('has no opinion for an allowed group, another namespace, or a write', async () => {
      const cases: Array<[Parameters<typeof authorizeWith>[1], Record<string, string>]> = [
        [read('get', 'vault', ['vault-admins', 'system:authenticated']), RESTRICTED],
        [read('get', 'web'), OPEN],
        [{ verb: 'create', resource: 'secrets', namespace: 'vault' }, RESTRICTED],
        [{ verb: 'get', resource: 'configmaps', namespace: 'vault', name: 'db' }, RESTRICTED],
      ];
      for (const [request, namespaceLabels] of cases) {
        assert.deepEqual(
          await authorizeWith(plugin, request, { settings: SETTINGS, namespaceLabels }),
          { denied: false },
          JSON.stringify(request),
        );
      }
    });

    it('forbids lists and watches across all namespaces unless clusterWideReads is allow', async () => {
      const everywhere = { verb: 'list', resource: 'secrets' };
      assert.deepEqual(await authorizeWith(plugin, everywhere, { settings: SETTINGS }), {
        denied: true,
        reason: `access-guard: Secrets cannot be read across all namespaces while namespaces labelled ${RESTRICTED_LABEL}=true exist: list them one namespace at a time`,
      });
      assert.deepEqual(
        await authorizeWith(plugin, everywhere, { settings: { ...SETTINGS, clusterWideReads: 'allow' } }),
        { denied: false },
      );
    });

    describe('with a shareableLabel', () => {
      const SHAREABLE = { ...SETTINGS, shareableLabel: 'example.com/shareable' };
      const narrowed = (verb: string, namespace: string | undefined, values: string[], operator = 'In' as const) => ({
        verb,
        resource: 'secrets',
        ...(namespace ? { namespace } : {}),
        labelSelector: [
          { key: 'app', operator: 'In' as const, values: ['web'] },
          { key: 'example.com/shareable', operator, values },
        ],
      });

      it('leaves to RBAC the lists and watches narrowed to shareable Secrets, here and across namespaces', async () => {
        for (const request of [narrowed('list', 'vault', ['true']), narrowed('watch', undefined, ['true'])]) {
          assert.deepEqual(
            await authorizeWith(plugin, request, { settings: SHAREABLE, namespaceLabels: RESTRICTED }),
            { denied: false },
            JSON.stringify(request),
          );
        }
      });

      it('still forbids what the selector does not narrow to shareable Secrets only', async () => {
        const cases = [
          narrowed('list', 'vault', ['true', 'false']),
          narrowed('list', 'vault', ['true'], 'NotIn' as 'In'),
          { ...narrowed('list', 'vault', []), labelSelector: [{ key: 'app', operator: 'In' as const, values: ['x'] }] },
          read('get', 'vault'),
        ];
        for (const request of cases) {
          assert.equal(
            (await authorizeWith(plugin, request, { settings: SHAREABLE, namespaceLabels: RESTRICTED })).denied,
            true,
            JSON.stringify(request),
          );
        }
      });

      it('means nothing without the setting: a narrowed list is forbidden', async () => {
        assert.equal(
          (
            await authorizeWith(plugin, narrowed('list', 'vault', ['true']), {
              settings: SETTINGS,
              namespaceLabels: RESTRICTED,
            })
          ).denied,
          true,
        );
      });
    });

    it('never asks about system:masters', async () => {
      const admin = { ...read('get', 'vault'), user: 'admin', groups: ['system:masters'] };
      assert.deepEqual(await authorizeWith(plugin, admin, { namespaceLabels: RESTRICTED }), { denied: false });
    });
  });

  describe('sessions into Pods (CONNECT)', () => {
    const cases: ReadonlyArray<[string, string]> = [
      ['exec', 'exec into'],
      ['attach', 'attach to'],
      ['portforward', 'port-forward to'],
      ['proxy', 'proxy to'],
    ];
    for (const [subResource, what] of cases) {
      it(`refuses ${subResource} into a Pod of a restricted namespace`, async () => {
        const run = await runPlugin(plugin, session(subResource), { settings: SETTINGS, namespaceLabels: RESTRICTED });
        assert.deepEqual(run.denial, {
          message: `access-guard: namespace vault is restricted (${RESTRICTED_LABEL}=true): only members of vault-admins may ${what} its Pods`,
          code: 403,
        });
      });
    }

    it('lets system:masters in, whatever the settings', async () => {
      const run = await runPlugin(plugin, session('exec', ['system:masters']), { namespaceLabels: RESTRICTED });
      assert.equal(run.allowed, true);
    });

    it('lets members of an allowed group in', async () => {
      const run = await runPlugin(plugin, session('exec', ['vault-admins']), {
        settings: SETTINGS,
        namespaceLabels: RESTRICTED,
      });
      assert.equal(run.allowed, true);
    });

    it('is not called for namespaces without the label, nor for other requests', () => {
      assert.equal(matches(plugin, session('exec', [], 'web'), { namespaceLabels: OPEN }), false);
      assert.equal(matches(plugin, session('exec'), { namespaceLabels: RESTRICTED }), true);
      assert.equal(
        matches(plugin, { ...session('log'), operation: 'CONNECT' }, { namespaceLabels: RESTRICTED }),
        false,
      );
    });
  });
});
