import assert from 'node:assert/strict';
import plugin from '../../plugins/resource-defaults.js';
import {
  cronjobCreate,
  deploymentCreate,
  edited,
  podCreate,
  requestOf,
  setAt,
  valueAt,
} from '../fixtures/reviews/index.js';
import { POD_SPEC_RESOURCES } from '../helpers/pod-resources.js';
import type { AdmissionRequest, JsonPatchOperation } from '../../server/plugin-api/index.js';
import { runPlugin, settingsOf, type PluginRun } from '../../server/plugin-testing/index.js';

const DEFAULTED = { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } };

/** The Pod fixture reduced to its `web` container, with `resources` as that container's resources. */
function webPod(resources: unknown): AdmissionRequest {
  const request = requestOf(podCreate());
  setAt(request.object, 'spec.containers', [edited(valueAt(request.object, 'spec.containers[0]'), { resources })]);
  return request;
}

/**
 * Runs the plugin on `webPod(before)` and checks what the apiserver gets: the request allowed, with exactly
 * `after` as the container's resources, and `patch` as the patch when one is given.
 */
async function expectWebResources(
  before: unknown,
  after: unknown,
  { settings, patch }: { settings?: unknown; patch?: readonly JsonPatchOperation[] } = {},
): Promise<PluginRun> {
  const request = webPod(before);
  const result = await runPlugin(plugin, request, { settings });
  assert.equal(result.allowed, true);
  assert.deepEqual(result.object, edited(request.object, { 'spec.containers[0].resources': after }));
  if (patch) assert.deepEqual(result.patch, patch);
  return result;
}

describe('resource-defaults', () => {
  describe('settings', () => {
    it('defaults to requests cpu 100m and memory 128Mi, and a memory limit of 512Mi', () => {
      assert.deepEqual(settingsOf(plugin, undefined), {
        requests: new Map([
          ['cpu', { text: '100m', value: 0.1 }],
          ['memory', { text: '128Mi', value: 134217728 }],
        ]),
        limits: new Map([['memory', { text: '512Mi', value: 536870912 }]]),
      });
    });

    it('accepts numbers, as YAML reads `cpu: 1`, and an empty map to turn a list off', () => {
      assert.deepEqual(settingsOf(plugin, { requests: { cpu: 1, 'ephemeral-storage': '1e9' }, limits: {} }), {
        requests: new Map([
          ['cpu', { text: '1', value: 1 }],
          ['ephemeral-storage', { text: '1e9', value: 1e9 }],
        ]),
        limits: new Map(),
      });
    });

    const refusals: ReadonlyArray<[string, unknown, string]> = [
      [
        'a quantity that is not one',
        { requests: { cpu: 'lots' } },
        'settings.requests.cpu: expected a quantity such as 100m, 0.5 or 128Mi, got "lots"',
      ],
      [
        'a negative quantity',
        { limits: { memory: '-1Gi' } },
        'settings.limits.memory: expected a quantity such as 100m, 0.5 or 128Mi, got "-1Gi"',
      ],
      [
        'a quantity of the wrong type',
        { requests: { cpu: true } },
        'settings.requests.cpu: expected a quantity such as 100m, 0.5 or 128Mi, got true',
      ],
      [
        'a list instead of a map',
        { limits: ['512Mi'] },
        'settings.limits: expected a map of resource names to quantities, e.g. { cpu: 100m, memory: 128Mi },' +
          ' got ["512Mi"]',
      ],
      [
        'null instead of a map',
        { requests: null },
        'settings.requests: expected a map of resource names to quantities, e.g. { cpu: 100m, memory: 128Mi },' +
          ' got null',
      ],
      [
        'a default request above the default limit, which would make containers invalid',
        { requests: { memory: '1Gi' } },
        'settings.requests.memory: the default request 1Gi is larger than the default limit 512Mi',
      ],
      [
        'both maps empty, which would leave it nothing to add',
        { requests: {}, limits: {} },
        'settings: expected requests or limits (or both) with at least one entry',
      ],
      ['a misspelt setting', { request: {} }, 'settings.request: unknown setting (known: requests, limits)'],
    ];
    for (const [description, raw, message] of refusals) {
      it(`refuses ${description}`, () => {
        assert.throws(() => settingsOf(plugin, raw), {
          name: 'ConfigError',
          message: `gateway.yaml: chain[0].${message}`,
        });
      });
    }
  });

  describe('default match', () => {
    it('sees CREATE of pods, workloads and pod templates', () => {
      assert.deepEqual(plugin.match, {
        rules: [
          {
            operations: ['CREATE'],
            apiGroups: ['', 'apps', 'batch'],
            apiVersions: ['*'],
            resources: POD_SPEC_RESOURCES,
          },
        ],
      });
    });
  });

  describe('given the Pod fixture', () => {
    it('fills the container without resources and leaves the one whose limit implies its request', async () => {
      const request = requestOf(podCreate());
      const result = await runPlugin(plugin, request);
      assert.deepEqual(result, {
        allowed: true,
        warnings: [],
        annotations: {},
        patch: [
          { op: 'add', path: '/spec/containers/1/resources/requests', value: DEFAULTED.requests },
          { op: 'add', path: '/spec/containers/1/resources/limits', value: DEFAULTED.limits },
        ],
        object: edited(request.object, { 'spec.containers[1].resources': DEFAULTED }),
        steps: [{ phase: 'mutate', outcome: 'patched' }],
      });
    });
  });

  describe('given a container without a resources field', () => {
    it('creates it with every default, in one patch operation', async () => {
      await expectWebResources(undefined, DEFAULTED, {
        patch: [{ op: 'add', path: '/spec/containers/0/resources', value: DEFAULTED }],
      });
    });
  });

  describe('given a container with only requests', () => {
    it('keeps them and adds the missing request and the limit', async () => {
      await expectWebResources(
        { requests: { cpu: '2' } },
        { requests: { cpu: '2', memory: '128Mi' }, limits: { memory: '512Mi' } },
        {
          patch: [
            { op: 'add', path: '/spec/containers/0/resources/requests/memory', value: '128Mi' },
            { op: 'add', path: '/spec/containers/0/resources/limits', value: { memory: '512Mi' } },
          ],
        },
      );
    });
  });

  describe('given a container with a limit but no request for that resource', () => {
    it('adds no request, because Kubernetes defaults the request to the limit (64Mi limit, 128Mi default)', async () => {
      await expectWebResources(
        { limits: { memory: '64Mi' } },
        { limits: { memory: '64Mi' }, requests: { cpu: '100m' } },
      );
    });
  });

  describe('given a container whose request is above the default limit', () => {
    it('adds no limit below it (1Gi request, 512Mi default limit)', async () => {
      await expectWebResources({ requests: { memory: '1Gi' } }, { requests: { memory: '1Gi', cpu: '100m' } });
    });

    it('compares across units (600M is above 512Mi), and leaves a complete container alone', async () => {
      const result = await expectWebResources(
        { requests: { memory: '600M', cpu: '1' } },
        { requests: { memory: '600M', cpu: '1' } },
      );
      assert.deepEqual(
        { patch: result.patch, steps: result.steps },
        { patch: [], steps: [{ phase: 'mutate', outcome: 'allowed' }] },
      );
    });

    it('adds the limit when the request equals it in other units (0.5Gi = 512Mi)', async () => {
      await expectWebResources(
        { requests: { memory: '0.5Gi', cpu: '1' } },
        { requests: { memory: '0.5Gi', cpu: '1' }, limits: { memory: '512Mi' } },
      );
    });

    it('adds no limit when the request cannot be read', async () => {
      await expectWebResources(
        { requests: { memory: 'plenty', cpu: '1' } },
        { requests: { memory: 'plenty', cpu: '1' } },
      );
    });
  });

  describe('given custom settings', () => {
    it('adds only what is configured, verbatim', async () => {
      const settings = { requests: { cpu: '50m', 'ephemeral-storage': '1Gi' }, limits: {} };
      await expectWebResources(undefined, { requests: { cpu: '50m', 'ephemeral-storage': '1Gi' } }, { settings });
    });
  });

  describe('given a Deployment with an init container', () => {
    it('fills the init container and leaves the complete main container', async () => {
      const request = requestOf(deploymentCreate());
      const result = await runPlugin(plugin, request);
      assert.deepEqual(
        result.object,
        edited(request.object, { 'spec.template.spec.initContainers[0].resources': DEFAULTED }),
      );
    });
  });

  describe('given a batch/v1beta1 CronJob whose container has a cpu limit', () => {
    it('fills the job template container without a cpu request', async () => {
      const request = requestOf(cronjobCreate());
      const result = await runPlugin(plugin, request);
      assert.deepEqual(
        result.object,
        edited(request.object, {
          'spec.jobTemplate.spec.template.spec.containers[0].resources': {
            limits: { cpu: '1', memory: '512Mi' },
            requests: { memory: '128Mi' },
          },
        }),
      );
    });
  });

  describe('given a Pod with an ephemeral container', () => {
    it('leaves it alone, as ephemeral containers may not declare resources', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'spec.ephemeralContainers', [{ name: 'debug', image: 'busybox:1.36' }]);
      const result = await runPlugin(plugin, request);
      assert.deepEqual(result.object, edited(request.object, { 'spec.containers[1].resources': DEFAULTED }));
    });
  });

  describe('given null fields', () => {
    it('treats null resources as absent', async () => {
      await expectWebResources(null, DEFAULTED, {
        patch: [{ op: 'replace', path: '/spec/containers/0/resources', value: DEFAULTED }],
      });
    });

    it('treats null requests and limits as absent', async () => {
      await expectWebResources({ requests: null, limits: null }, DEFAULTED);
    });

    it('leaves a PodSpec with null container lists alone', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'spec.containers', null);
      setAt(request.object, 'spec.initContainers', null);
      const result = await runPlugin(plugin, request);
      assert.deepEqual({ allowed: result.allowed, patch: result.patch }, { allowed: true, patch: [] });
    });
  });
});
