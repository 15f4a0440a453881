/**
 * Record and replay through a real kube-apiserver: the apiserver sends Pod and ConfigMap creates through a
 * gateway recording every review, with require-labels in warn mode (so all are stored); `replay` of that
 * session against the same config with require-labels in enforce mode lists exactly the objects that would now
 * be refused, and nothing else, and exits 3 with --exit-code.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { plugins as shippedPlugins } from '../../plugins/index.js';
import { runCliCaptured } from '../helpers/cli.js';
import { core, eventually, randomSuffix, warningTexts } from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { pausePod } from './objects.js';
import { PROBE_LABEL, testPlugins } from './plugins.js';

// Pods and ConfigMaps, but not the registration probe's ConfigMaps (a warning on those would read as a webhook
// still called when the helper deregisters).
const CHAIN = `
- plugin: require-labels
  mode: warn
  settings: { labels: [team] }
  match:
    rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods, configmaps] }]
    objectSelector: { matchExpressions: [{ key: ${PROBE_LABEL}, operator: DoesNotExist }] }
`;
const WARNING = 'require-labels: missing required label: team (mode warn: not enforced)';

describe('replay of a recorded session through a real kube-apiserver', function () {
  let gw: E2EGateway | undefined;
  let namespace: string;

  before(async function () {
    gw = await startE2EGateway({
      suite: 'replay',
      chain: CHAIN,
      record: { path: 'recording.ndjson', sampleRate: 1 },
      validating: [
        {
          name: 'validate',
          route: 'validate',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'configmaps'] }],
        },
      ],
    });
    namespace = await gw.namespace();
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
  });

  it('lists exactly the reviews a candidate enforcing require-labels would deny', async function () {
    const g = gw!;
    const suffix = randomSuffix();
    const created: Array<[string, string[]]> = [];
    const pod = async (name: string, labels: Record<string, string>) => {
      const { headers } = await core().createNamespacedPodWithHttpInfo({ namespace, body: pausePod(name, labels) });
      created.push([name, warningTexts(headers)]);
    };
    const configMap = async (name: string, labels: Record<string, string>) => {
      const body = { metadata: { name, labels }, data: { key: 'value' } };
      const { headers } = await core().createNamespacedConfigMapWithHttpInfo({ namespace, body });
      created.push([name, warningTexts(headers)]);
    };
    await pod(`labelled-pod-${suffix}`, { team: 'payments' });
    await pod(`bare-pod-${suffix}`, { app: 'web' });
    await configMap(`labelled-cm-${suffix}`, { team: 'payments' });
    await configMap(`bare-cm-${suffix}`, {});
    // Warn mode: every object stored, the two without the label with the warning.
    assert.deepEqual(created, [
      [`labelled-pod-${suffix}`, []],
      [`bare-pod-${suffix}`, [WARNING]],
      [`labelled-cm-${suffix}`, []],
      [`bare-cm-${suffix}`, [WARNING]],
    ]);

    // The session: this namespace's reviews (the registration probes are recorded too, in their own namespace).
    const recording = path.join(g.dir, 'recording.ndjson');
    const session = async () =>
      (await readFile(recording, 'utf8'))
        .split('\n')
        .filter(
          (line) =>
            line !== '' && (JSON.parse(line) as { request: { namespace?: string } }).request.namespace === namespace,
        );
    await eventually('the four reviews are recorded', async () => ((await session()).length === 4 ? true : undefined));
    await writeFile(path.join(g.dir, 'session.ndjson'), `${(await session()).join('\n')}\n`);

    // The candidate: the running config with require-labels enforced.
    const config = parse(await readFile(path.join(g.dir, 'gateway.yaml'), 'utf8')) as {
      log: unknown;
      record?: unknown;
      chain: Array<{ plugin: string; mode?: string }>;
    };
    config.chain.find((entry) => entry.plugin === 'require-labels')!.mode = 'enforce';
    config.log = { level: 'warn' };
    delete config.record;
    await writeFile(path.join(g.dir, 'candidate.yaml'), stringify(config));

    const run = await runCliCaptured(['replay', 'session.ndjson', '--config', 'candidate.yaml', '--exit-code'], {
      cwd: g.dir,
      plugins: [...shippedPlugins, ...testPlugins],
    });
    assert.equal(run.stderr, '');
    assert.equal(
      run.stdout,
      `replayed 4 reviews of session.ndjson on candidate.yaml
2 newly denied, 0 newly allowed, 0 with the denial changed, 0 with the patch changed, 0 with the warnings changed, 2 unchanged

newly denied:
  line 2: CREATE Pod ${namespace}/bare-pod-${suffix} (validate)
    require-labels: missing required label: team
  line 4: CREATE ConfigMap ${namespace}/bare-cm-${suffix} (validate)
    require-labels: missing required label: team
`,
    );
    assert.equal(run.code, 3);
  });
});
