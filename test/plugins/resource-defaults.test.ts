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
import { parseSettings, runMutate } from '../helpers/plugin-context.js';
import { POD_SPEC_RESOURCES } from '../helpers/pod-resources.js';

const DEFAULTED = { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } };

/**
 * Runs the plugin on the Pod fixture reduced to its `web` container with `before` as its resources, and
 * checks the whole result: the fixture with exactly `after` as those resources.
 */
async function expectWebResources(before: unknown, after: unknown, settings?: unknown): Promise<void> {
  const request = requestOf(podCreate());
  setAt(request.object, 'spec.containers', [
    edited(valueAt(request.object, 'spec.containers[0]'), { resources: before }),
  ]);
  const result = await runMutate(plugin, request, settings);
  assert.deepEqual(result.object, edited(request.object, { 'spec.containers[0].resources': after }));
}

describe('resource-defaults', () => {
  describe('settings', () => {
    it('defaults to requests cpu 100m and memory 128Mi, and a memory limit of 512Mi', () => {
      assert.deepEqual(parseSettings(plugin, undefined), {
        requests: new Map([
          ['cpu', { text: '100m', value: 0.1 }],
          ['memory', { text: '128Mi', value: 134217728 }],
        ]),
        limits: new Map([['memory', { text: '512Mi', value: 536870912 }]]),
      });
    });

    it('accepts numbers, as YAML reads `cpu: 1`, and an empty map to turn a list off', () => {
      assert.deepEqual(parseSettings(plugin, { requests: { cpu: 1, 'ephemeral-storage': '1e9' }, limits: {} }), {
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
        'requests.cpu: expected a quantity such as 100m, 0.5 or 128Mi, got "lots"',
      ],
      [
        'a negative quantity',
        { limits: { memory: '-1Gi' } },
        'limits.memory: expected a quantity such as 100m, 0.5 or 128Mi, got "-1Gi"',
      ],
      [
        'a quantity of the wrong type',
        { requests: { cpu: true } },
        'requests.cpu: expected a quantity such as 100m, 0.5 or 128Mi, got true',
      ],
      [
        'a list instead of a map',
        { limits: ['512Mi'] },
        'limits: expected a map of resource names to quantities, e.g. { cpu: 100m, memory: 128Mi }, got ["512Mi"]',
      ],
      [
        'null instead of a map',
        { requests: null },
        'requests: expected a map of resource names to quantities, e.g. { cpu: 100m, memory: 128Mi }, got null',
      ],
      [
        'a default request above the default limit, which would make containers invalid',
        { requests: { memory: '1Gi' } },
        'requests.memory: the default request 1Gi is larger than the default limit 512Mi',
      ],
      ['a misspelt setting', { request: {} }, 'request: unknown setting (known: requests, limits)'],
    ];
    for (const [description, raw, message] of refusals) {
      it(`refuses ${description}`, () => {
        assert.throws(() => parseSettings(plugin, raw), { name: 'SettingsError', message });
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
      const result = await runMutate(plugin, request);
      assert.deepEqual(
        { object: result.object, outcome: result.outcome, warnings: result.warnings, annotations: result.annotations },
        {
          object: edited(request.object, { 'spec.containers[1].resources': DEFAULTED }),
          outcome: undefined,
          warnings: [],
          annotations: {},
        },
      );
    });
  });

  describe('given a container without a resources field', () => {
    it('creates it with every default', async () => {
      await expectWebResources(undefined, DEFAULTED);
    });
  });

  describe('given a container with only requests', () => {
    it('keeps them and adds the missing request and the limit', async () => {
      await expectWebResources(
        { requests: { cpu: '2' } },
        { requests: { cpu: '2', memory: '128Mi' }, limits: { memory: '512Mi' } },
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

    it('compares across units (600M is above 512Mi)', async () => {
      await expectWebResources({ requests: { memory: '600M', cpu: '1' } }, { requests: { memory: '600M', cpu: '1' } });
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
      await expectWebResources(undefined, { requests: { cpu: '50m', 'ephemeral-storage': '1Gi' } }, settings);
    });
  });

  describe('given a Deployment with an init container', () => {
    it('fills the init container and leaves the complete main container', async () => {
      const request = requestOf(deploymentCreate());
      const result = await runMutate(plugin, request);
      assert.deepEqual(
        result.object,
        edited(request.object, { 'spec.template.spec.initContainers[0].resources': DEFAULTED }),
      );
    });
  });

  describe('given a batch/v1beta1 CronJob whose container has a cpu limit', () => {
    it('fills the job template container without a cpu request', async () => {
      const request = requestOf(cronjobCreate());
      const result = await runMutate(plugin, request);
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
      const result = await runMutate(plugin, request);
      assert.deepEqual(result.object, edited(request.object, { 'spec.containers[1].resources': DEFAULTED }));
    });
  });

  describe('given malformed resources', () => {
    const cases: ReadonlyArray<[string, unknown]> = [
      ['resources that are a string', '1 cpu'],
      ['requests that are a list', { requests: ['cpu=1'] }],
      ['limits that are a number', { limits: 1 }],
    ];
    for (const [description, resources] of cases) {
      it(`leaves a container with ${description} alone`, async () => {
        await expectWebResources(resources, resources);
      });
    }

    it('treats null maps as absent', async () => {
      await expectWebResources({ requests: null, limits: null }, DEFAULTED);
    });

    it('skips container lists that are not lists and containers that are not objects', async () => {
      const request = requestOf(podCreate());
      setAt(request.object, 'spec.containers', { web: {} });
      setAt(request.object, 'spec.initContainers', ['init', null]);
      const result = await runMutate(plugin, request);
      assert.deepEqual(result.object, request.object);
    });
  });
});
