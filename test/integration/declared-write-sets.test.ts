/**
 * Declared write sets through the running gateway over HTTPS: remote providers with disjoint `supplies` are
 * called at once (their calls all arrive before the first answer), the answer is the serial chain's, and a
 * step that writes outside its `supplies` fails — refused under Fail, left out with a warning under Ignore.
 */
import assert from 'node:assert/strict';
import { podCreate } from '../fixtures/reviews/index.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { patchedObject } from '../helpers/patch.js';
import { startRendezvousProvider, type RendezvousProvider } from '../helpers/rendezvous-provider.js';
import { createTestPlugins, type TestPlugins } from '../helpers/test-plugins.js';
import type { AdmissionReview } from '../../server/admission/types.js';

const NAMES = ['p1', 'p2', 'p3'] as const;

describe('declared write sets', () => {
  let harness: Harness | undefined;
  let provider: RendezvousProvider | undefined;
  let test: TestPlugins;

  beforeEach(() => {
    test = createTestPlugins();
  });

  afterEach(async () => {
    await harness?.close();
    await provider?.close();
    harness = undefined;
    provider = undefined;
  });

  /** A chain of the three providers, each adding its own label, with or without `supplies`. */
  const providers = (p: RendezvousProvider, declared: boolean) => `
chain:
${NAMES.map(
  (name) => `  - provider: ${name}
    url: ${p.url(name)}
    caBundle: ${p.caBundle}
    phases: [mutate]
    timeoutSeconds: 5${declared ? `\n    supplies: [/metadata/labels/${name}]` : ''}`,
).join('\n')}
`;

  async function review(yaml: string): Promise<AdmissionReview> {
    harness = await startHarness({ yaml, plugins: test.plugins });
    return (await harness.post('/mutate', podCreate())).body as AdmissionReview;
  }

  describe('given three remote providers with disjoint supplies', () => {
    it('calls them at once: every call arrives before the first answer', async () => {
      provider = await startRendezvousProvider({ together: 3, aloneAfterMs: 2000 });
      const answer = await review(providers(provider, true));
      assert.equal(answer.response?.allowed, true);
      assert.deepEqual(provider.events, ['arrive:p1', 'arrive:p2', 'arrive:p3', 'answer:p1', 'answer:p2', 'answer:p3']);
    });

    it('answers what the same chain without declarations answers, calling them one after another', async () => {
      provider = await startRendezvousProvider({ together: 3, aloneAfterMs: 50 });
      const serial = await review(providers(provider, false));
      assert.deepEqual(provider.events, ['arrive:p1', 'answer:p1', 'arrive:p2', 'answer:p2', 'arrive:p3', 'answer:p3']);
      await harness!.close();
      await provider.close();

      provider = await startRendezvousProvider({ together: 3, aloneAfterMs: 2000 });
      const concurrent = await review(providers(provider, true));
      const original = podCreate().request!.object!;
      const labels = { app: 'web', team: 'payments', p1: 'yes', p2: 'yes', p3: 'yes' };
      assert.deepEqual(patchedObject(original, serial.response!).metadata?.labels, labels);
      assert.deepEqual(patchedObject(original, concurrent.response!), patchedObject(original, serial.response!));
    });

    it('sends each the object as the level began, and reports the level of each step in the review line', async () => {
      provider = await startRendezvousProvider({ together: 3, aloneAfterMs: 2000 });
      await review(providers(provider, true));
      const sent = provider.objects;
      for (const name of NAMES) {
        const object = sent.get(name) as { metadata: { labels: Record<string, string> } };
        assert.deepEqual(object.metadata.labels, { app: 'web', team: 'payments' }, name);
      }
      const line = harness!.logs.find((l) => l.msg === 'review');
      assert.deepEqual(
        (line?.steps as Array<{ step: string; outcome: string; level: number }>).map(({ step, outcome, level }) => ({
          step,
          outcome,
          level,
        })),
        NAMES.map((step) => ({ step, outcome: 'patched', level: 0 })),
      );
    });
  });

  describe('given a step that writes outside its supplies', () => {
    const chain = (failurePolicy: 'Fail' | 'Ignore') => `
chain:
  - { plugin: add-label, name: team, supplies: [/metadata/labels/team-id], settings: { labels: { team-id: t1 } } }
  - plugin: add-label
    name: sneaky
    failurePolicy: ${failurePolicy}
    supplies: [/metadata/labels/sneaky]
    settings: { labels: { sneaky: 'yes', owner: 'me' } }
`;

    it('refuses the request under failurePolicy Fail, naming the pointer and the supplies', async () => {
      const answer = await review(chain('Fail'));
      assert.deepEqual(answer.response, {
        uid: podCreate().request!.uid,
        allowed: false,
        status: {
          code: 500,
          message:
            'plugin "sneaky" failed (write_outside_supplies): wrote /metadata/labels/owner, outside its supplies (/metadata/labels/sneaky)',
          reason: 'InternalError',
        },
      });
    });

    it('leaves out all its writes and warns under failurePolicy Ignore, and counts it', async () => {
      const answer = await review(chain('Ignore'));
      const object = patchedObject(podCreate().request!.object!, answer.response!);
      assert.deepEqual(object.metadata?.labels, { app: 'web', team: 'payments', 'team-id': 't1' });
      assert.deepEqual(answer.response?.warnings, [
        'sneaky: failed open (write_outside_supplies): wrote /metadata/labels/owner, outside its supplies (/metadata/labels/sneaky)',
      ]);
      const metrics = (await harness!.ops('/metrics')).text;
      assert.match(metrics, /^admission_gateway_writes_outside_supplies_total\{step="sneaky"\} 1$/m);
    });
  });

  describe('given IfNeeded steps', () => {
    it('reinvokes a declared step only when a later step changed what it reads', async () => {
      const answer = await review(`
chain:
  - { plugin: add-label, name: reads-team, reinvocationPolicy: IfNeeded, supplies: [/metadata/labels/a], dependsOn: [/metadata/labels/team], settings: { tag: reads-team, labels: { a: '1' } } }
  - { plugin: add-label, name: reads-tier, reinvocationPolicy: IfNeeded, supplies: [/metadata/labels/b], dependsOn: [/metadata/labels/tier], settings: { tag: reads-tier, labels: { b: '1' } } }
  - { plugin: add-label, name: sets-team, supplies: [/metadata/labels/team], settings: { tag: sets-team, labels: { team: platform } } }
`);
      assert.equal(answer.response?.allowed, true);
      assert.deepEqual(
        test.calls.records.filter((r) => r.phase === 'mutate').map((r) => r.tag),
        ['reads-team', 'reads-tier', 'sets-team', 'reads-team'],
      );
    });
  });
});
