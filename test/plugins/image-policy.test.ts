import assert from 'node:assert/strict';
import { POD_SPEC_RESOURCES } from '../helpers/pod-resources.js';
import plugin from '../../plugins/image-policy.js';
import { on, type AdmissionRequest } from '../../server/plugin-api/index.js';
import { matches, runPlugin, settingsOf } from '../../server/plugin-testing/index.js';
import {
  cronjobCreate,
  deploymentCreate,
  edited,
  podCreate,
  podDelete,
  podUpdate,
  requestOf,
  setAt,
} from '../fixtures/reviews/index.js';

const DIGEST = 'sha256:2bb6a2e1d3e0c1a7e4a3b8c6f0d9e5a1b7c3d2e4f6a8b0c2d4e6f8a0b2c4d6e8';
const MIRROR_HUB = { mirrors: { 'docker.io': 'mirror.acme.io' } };

const denial = (message: string) => ({ message: `image-policy: ${message}`, code: 403 });
const replaceImage = (path: string, value: string) => ({ op: 'replace', path: `/spec/${path}/image`, value });

/** The Pod fixture with its two containers' images replaced. */
function podWithImages(web: unknown, logShipper: unknown = 'ghcr.io/acme/log-shipper:2.1.0'): AdmissionRequest {
  const request = requestOf(podCreate());
  setAt(request.object, 'spec.containers[0].image', web);
  setAt(request.object, 'spec.containers[1].image', logShipper);
  return request;
}

describe('image-policy', () => {
  describe('settings', () => {
    it('allows any registry, forbids latest and mirrors nothing by default', () => {
      assert.deepEqual(settingsOf(plugin, undefined), {
        allowedRegistries: [],
        forbidLatest: true,
        mirrors: new Map(),
      });
    });

    it('reads index.docker.io as docker.io in allowed registries and mirrors', () => {
      const parsed = settingsOf(plugin, {
        allowedRegistries: ['index.docker.io/library', 'ghcr.io/acme/'],
        mirrors: { 'index.docker.io': 'harbor.acme.io/dockerhub' },
      });
      assert.deepEqual(parsed, {
        allowedRegistries: ['docker.io/library', 'ghcr.io/acme/'],
        forbidLatest: true,
        mirrors: new Map([['docker.io', 'harbor.acme.io/dockerhub']]),
      });
    });

    const refusals: ReadonlyArray<[string, unknown, string]> = [
      [
        'an allowed entry without a registry',
        { allowedRegistries: ['registry.k8s.io', 'nginx'] },
        'allowedRegistries[1]: expected a registry host, optionally followed by a repository path' +
          ' (e.g. registry.k8s.io, docker.io/library or ghcr.io/acme/), got "nginx"',
      ],
      [
        'an allowed entry written as a URL',
        { allowedRegistries: ['https://ghcr.io'] },
        'allowedRegistries[0]: expected a registry host, optionally followed by a repository path' +
          ' (e.g. registry.k8s.io, docker.io/library or ghcr.io/acme/), got "https://ghcr.io"',
      ],
      [
        'allowed registries given as one string',
        { allowedRegistries: 'ghcr.io' },
        'allowedRegistries: expected a list of strings, got string "ghcr.io"',
      ],
      [
        'a mirror key that is not a registry',
        { mirrors: { dockerhub: 'mirror.acme.io' } },
        'mirrors.dockerhub: expected a registry host as the key, e.g. docker.io or quay.io',
      ],
      [
        'a mirror that is not a registry',
        { mirrors: { 'docker.io': 'mirror' } },
        'mirrors.docker.io: expected a registry host, optionally with a path' +
          ' (e.g. mirror.acme.io or harbor.acme.io/dockerhub), got "mirror"',
      ],
      [
        'a mirror with a trailing slash',
        { mirrors: { 'docker.io': 'mirror.acme.io/' } },
        'mirrors.docker.io: expected a registry host, optionally with a path' +
          ' (e.g. mirror.acme.io or harbor.acme.io/dockerhub), got "mirror.acme.io/"',
      ],
      ['a non-boolean forbidLatest', { forbidLatest: 'no' }, 'forbidLatest: expected true or false, got string "no"'],
      [
        'a misspelt setting',
        { allowedRegistry: ['ghcr.io'] },
        'allowedRegistry: unknown setting (known: allowedRegistries, forbidLatest, mirrors)',
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

  describe('default match', () => {
    it('sees CREATE and UPDATE of pods, ephemeral containers, workloads and pod templates', () => {
      assert.deepEqual(plugin.match, {
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

    it('does not see a DELETE', () => {
      assert.equal(matches(plugin, requestOf(podDelete())), false);
    });
  });

  describe('mutate', () => {
    it('has a mutate step only when mirrors are configured (no call per review for nothing to rewrite)', async () => {
      const phasesWith = async (settings: unknown) => {
        const { steps } = await runPlugin(plugin, requestOf(deploymentCreate()), { settings });
        return steps.map(({ phase }) => phase);
      };
      assert.deepEqual(await phasesWith({}), ['validate']);
      assert.deepEqual(await phasesWith({ allowedRegistries: ['ghcr.io'] }), ['validate']);
      assert.deepEqual(await phasesWith(MIRROR_HUB), ['mutate', 'validate']);
    });

    describe('without mirrors', () => {
      it('runs no mutate step, changes nothing and annotates nothing', async () => {
        const request = requestOf(podCreate());
        const result = await runPlugin(plugin, request, { settings: { allowedRegistries: ['docker.io', 'ghcr.io'] } });
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

    describe('given a Pod with a Docker Hub image and a mirror for docker.io', () => {
      it('rewrites that image to the mirror, leaves the others and annotates the count', async () => {
        const request = requestOf(podCreate());
        const result = await runPlugin(plugin, request, { settings: MIRROR_HUB });
        assert.deepEqual(result, {
          allowed: true,
          warnings: [],
          annotations: { 'image-policy.rewritten': '1' },
          patch: [replaceImage('containers/0', 'mirror.acme.io/library/nginx:1.25.3')],
          object: edited(request.object, { 'spec.containers[0].image': 'mirror.acme.io/library/nginx:1.25.3' }),
          steps: [
            { phase: 'mutate', outcome: 'patched' },
            { phase: 'validate', outcome: 'allowed' },
          ],
        });
      });
    });

    describe('given images of every form', () => {
      const cases: ReadonlyArray<[string, string, string, Record<string, string>]> = [
        ['keeps the digest', `nginx@${DIGEST}`, `mirror.acme.io/library/nginx@${DIGEST}`, MIRROR_HUB.mirrors],
        ['keeps an untagged image untagged', 'busybox', 'mirror.acme.io/library/busybox', MIRROR_HUB.mirrors],
        ['keeps a user repository path', 'bitnami/redis:7.2', 'mirror.acme.io/bitnami/redis:7.2', MIRROR_HUB.mirrors],
        [
          'prefixes the path of a mirror that has one',
          'nginx:1.25',
          'harbor.acme.io/dockerhub/library/nginx:1.25',
          { 'docker.io': 'harbor.acme.io/dockerhub' },
        ],
        [
          'rewrites a registry with a port',
          'localhost:5000/app:1.0',
          'registry.acme.io/app:1.0',
          { 'localhost:5000': 'registry.acme.io' },
        ],
      ];
      for (const [description, image, expected, mirrors] of cases) {
        it(`${description}: ${image} → ${expected}`, async () => {
          const result = await runPlugin(plugin, podWithImages(image), { settings: { mirrors }, phases: ['mutate'] });
          assert.deepEqual(result.patch, [replaceImage('containers/0', expected)]);
        });
      }
    });

    describe('given a Deployment with an init container and a mirror for ghcr.io', () => {
      it('rewrites both template containers', async () => {
        const request = requestOf(deploymentCreate());
        const result = await runPlugin(plugin, request, {
          settings: { mirrors: { 'ghcr.io': 'ghcr-mirror.acme.io' } },
        });
        assert.deepEqual(
          { allowed: result.allowed, object: result.object, annotations: result.annotations },
          {
            allowed: true,
            object: edited(request.object, {
              'spec.template.spec.containers[0].image': 'ghcr-mirror.acme.io/acme/checkout:1.8.2',
              'spec.template.spec.initContainers[0].image': 'ghcr-mirror.acme.io/acme/checkout-migrations:1.8.2',
            }),
            annotations: { 'image-policy.rewritten': '2' },
          },
        );
      });
    });

    describe('given a batch/v1beta1 CronJob', () => {
      it('rewrites the job template container, then refuses it for its implied latest tag', async () => {
        const result = await runPlugin(plugin, requestOf(cronjobCreate()), { settings: MIRROR_HUB });
        assert.deepEqual(
          { denial: result.denial, patch: result.patch },
          {
            denial: denial(
              'spec.jobTemplate.spec.template.spec.containers[0] image "mirror.acme.io/library/busybox":' +
                ' tag latest is not allowed (no tag or digest means latest)',
            ),
            patch: [replaceImage('jobTemplate/spec/template/spec/containers/0', 'mirror.acme.io/library/busybox')],
          },
        );
      });
    });

    describe('given a Pod with an ephemeral container', () => {
      it('rewrites it too', async () => {
        const request = requestOf(podCreate());
        setAt(request.object, 'spec.ephemeralContainers', [{ name: 'debug', image: 'busybox:1.36' }]);
        const result = await runPlugin(plugin, request, { settings: MIRROR_HUB });
        assert.deepEqual(
          { allowed: result.allowed, object: result.object, annotations: result.annotations },
          {
            allowed: true,
            object: edited(request.object, {
              'spec.containers[0].image': 'mirror.acme.io/library/nginx:1.25.3',
              'spec.ephemeralContainers[0].image': 'mirror.acme.io/library/busybox:1.36',
            }),
            annotations: { 'image-policy.rewritten': '2' },
          },
        );
      });
    });

    describe('given an UPDATE', () => {
      it('leaves an image the request does not change, so running containers are not restarted', async () => {
        const request = requestOf(podUpdate());
        const result = await runPlugin(plugin, request, { settings: MIRROR_HUB });
        assert.deepEqual(
          { allowed: result.allowed, patch: result.patch, annotations: result.annotations, steps: result.steps },
          {
            allowed: true,
            patch: [],
            annotations: {},
            steps: [
              { phase: 'mutate', outcome: 'allowed' },
              { phase: 'validate', outcome: 'allowed' },
            ],
          },
        );
      });

      it('rewrites an image the request changes', async () => {
        const request = requestOf(podUpdate());
        setAt(request.object, 'spec.containers[0].image', 'nginx:1.26.0');
        const result = await runPlugin(plugin, request, { settings: MIRROR_HUB });
        assert.deepEqual(
          result.object,
          edited(request.object, { 'spec.containers[0].image': 'mirror.acme.io/library/nginx:1.26.0' }),
        );
      });
    });

    describe('given malformed containers', () => {
      const cases: ReadonlyArray<[string, Record<string, unknown>]> = [
        [
          'images that are not strings and container lists that are not lists',
          { 'spec.containers[0].image': 42, 'spec.initContainers': { name: 'init', image: 'nginx' } },
        ],
        [
          'missing images and null container lists',
          { 'spec.containers[0].image': undefined, 'spec.initContainers': null },
        ],
      ];
      for (const [description, values] of cases) {
        it(`skips ${description}, and refuses an image that is not a valid reference`, async () => {
          const request = podWithImages('nginx:1.25.3', 'Not A Reference');
          request.object = edited(request.object, values);
          const result = await runPlugin(plugin, request, { settings: MIRROR_HUB });
          assert.deepEqual(result, {
            allowed: false,
            denial: denial('spec.containers[1] image "Not A Reference": not a valid image reference'),
            warnings: [],
            annotations: {},
            patch: [],
            object: request.object,
            steps: [
              { phase: 'mutate', outcome: 'allowed' },
              { phase: 'validate', outcome: 'denied' },
            ],
          });
        });
      }
    });
  });

  describe('validate', () => {
    describe('with the default settings', () => {
      it('allows the Pod fixture, whose images are all tagged', async () => {
        const request = requestOf(podCreate());
        const result = await runPlugin(plugin, request);
        assert.deepEqual(result, {
          allowed: true,
          warnings: [],
          annotations: {},
          patch: [],
          object: request.object,
          steps: [{ phase: 'validate', outcome: 'allowed' }],
        });
      });

      it('refuses an explicit latest tag, naming the container path', async () => {
        const result = await runPlugin(plugin, podWithImages('nginx:1.25.3', 'nginx:latest'));
        assert.deepEqual(result.denial, denial('spec.containers[1] image "nginx:latest": tag latest is not allowed'));
      });

      it('refuses an image with neither tag nor digest, under the CronJob template path', async () => {
        const result = await runPlugin(plugin, requestOf(cronjobCreate()));
        assert.deepEqual(
          result.denial,
          denial(
            'spec.jobTemplate.spec.template.spec.containers[0] image "busybox":' +
              ' tag latest is not allowed (no tag or digest means latest)',
          ),
        );
      });

      it('allows images pinned by digest, even with a latest tag', async () => {
        const result = await runPlugin(plugin, podWithImages(`nginx@${DIGEST}`, `nginx:latest@${DIGEST}`));
        assert.equal(result.allowed, true, result.denial?.message);
      });

      it('refuses references the runtime could not pull', async () => {
        const result = await runPlugin(plugin, podWithImages('Nginx:1.25'));
        assert.deepEqual(result.denial, denial('spec.containers[0] image "Nginx:1.25": not a valid image reference'));
      });
    });

    describe('with forbidLatest false', () => {
      it('allows untagged and latest images', async () => {
        const result = await runPlugin(plugin, podWithImages('nginx', 'nginx:latest'), {
          settings: { forbidLatest: false },
        });
        assert.equal(result.allowed, true, result.denial?.message);
      });
    });

    describe('with allowed registries', () => {
      const allowedRegistries = ['registry.k8s.io', 'docker.io/library', 'ghcr.io/acme/', 'localhost:5000'];

      it('allows images under an allowed registry or repository path', async () => {
        const images = ['registry.k8s.io/pause:3.9', 'nginx:1.25', 'ghcr.io/acme/team/app:1', 'localhost:5000/app:1.0'];
        const request = requestOf(podCreate());
        setAt(
          request.object,
          'spec.containers',
          images.map((image, i) => ({ name: `c${i}`, image })),
        );
        const result = await runPlugin(plugin, request, { settings: { allowedRegistries } });
        assert.equal(result.allowed, true, result.denial?.message);
      });

      it('lists every refused image with its path, then the allowed registries', async () => {
        const request = requestOf(deploymentCreate());
        setAt(request.object, 'spec.template.spec.containers[0].image', 'quay.io/acme/checkout:latest');
        setAt(request.object, 'spec.template.spec.initContainers[0].image', 'registry.k8s.io.evil.com/pause:3.9');
        const result = await runPlugin(plugin, request, {
          settings: { allowedRegistries: ['registry.k8s.io', 'docker.io/library'] },
        });
        assert.deepEqual(
          result.denial,
          denial(
            'spec.template.spec.containers[0] image "quay.io/acme/checkout:latest": tag latest is not allowed,' +
              ' quay.io/acme/checkout is not in an allowed registry; ' +
              'spec.template.spec.initContainers[0] image "registry.k8s.io.evil.com/pause:3.9":' +
              ' registry.k8s.io.evil.com/pause is not in an allowed registry; ' +
              'allowed registries: registry.k8s.io, docker.io/library',
          ),
        );
      });

      it('matches prefixes at path boundaries only', async () => {
        const request = podWithImages('docker.io/library-fakes/nginx:1', 'ghcr.io/acmecorp/app:1');
        const result = await runPlugin(plugin, request, {
          settings: { allowedRegistries: ['docker.io/library', 'ghcr.io/acme/'] },
        });
        assert.deepEqual(
          result.denial,
          denial(
            'spec.containers[0] image "docker.io/library-fakes/nginx:1": docker.io/library-fakes/nginx is not in an' +
              ' allowed registry; spec.containers[1] image "ghcr.io/acmecorp/app:1": ghcr.io/acmecorp/app is not in' +
              ' an allowed registry; allowed registries: docker.io/library, ghcr.io/acme/',
          ),
        );
      });
    });

    describe('with a mirror', () => {
      // The validate phase alone: the image as the apiserver sends it when the mutate phase did not rewrite it.
      const validateOnly = { phases: ['validate'] } as const;

      it('accepts an image not yet rewritten when its mirror is allowed', async () => {
        const result = await runPlugin(plugin, requestOf(podCreate()), {
          ...validateOnly,
          settings: { ...MIRROR_HUB, allowedRegistries: ['mirror.acme.io', 'ghcr.io/acme/'] },
        });
        assert.equal(result.allowed, true, result.denial?.message);
      });

      it('names the mirrored reference when the mirror is not allowed', async () => {
        const result = await runPlugin(plugin, requestOf(podCreate()), {
          ...validateOnly,
          settings: { ...MIRROR_HUB, allowedRegistries: ['ghcr.io/acme/'] },
        });
        assert.deepEqual(
          result.denial,
          denial(
            'spec.containers[0] image "nginx:1.25.3": mirror.acme.io/library/nginx' +
              ' (mirrored to "mirror.acme.io/library/nginx:1.25.3") is not in an allowed registry;' +
              ' allowed registries: ghcr.io/acme/',
          ),
        );
      });

      it('accepts the image the mutate phase rewrote', async () => {
        const result = await runPlugin(plugin, requestOf(podCreate()), {
          settings: { ...MIRROR_HUB, allowedRegistries: ['mirror.acme.io', 'ghcr.io/acme/'] },
        });
        assert.deepEqual(
          { allowed: result.allowed, patch: result.patch },
          { allowed: true, patch: [replaceImage('containers/0', 'mirror.acme.io/library/nginx:1.25.3')] },
        );
      });
    });

    describe('given an UPDATE', () => {
      it('allows an image the request leaves unchanged, even if the policy would refuse it now', async () => {
        const request = requestOf(podUpdate());
        setAt(request.object, 'spec.containers[0].image', 'nginx:latest');
        setAt(request.oldObject, 'spec.containers[0].image', 'nginx:latest');
        const result = await runPlugin(plugin, request);
        assert.equal(result.allowed, true, result.denial?.message);
      });

      it('refuses an image the request changes', async () => {
        const request = requestOf(podUpdate());
        setAt(request.object, 'spec.containers[1].image', 'ghcr.io/acme/log-shipper:latest');
        const result = await runPlugin(plugin, request);
        assert.deepEqual(
          result.denial,
          denial('spec.containers[1] image "ghcr.io/acme/log-shipper:latest": tag latest is not allowed'),
        );
      });
    });

    describe('given a DELETE, under an entry match that includes it', () => {
      it('allows it: there is no image to pull', async () => {
        const result = await runPlugin(plugin, requestOf(podDelete()), {
          match: on('pods').delete().toMatch(),
          settings: { allowedRegistries: ['registry.k8s.io'] },
        });
        assert.deepEqual(
          { allowed: result.allowed, steps: result.steps },
          { allowed: true, steps: [{ phase: 'validate', outcome: 'allowed' }] },
        );
      });
    });

    describe('given malformed objects', () => {
      it('skips images that are not strings or missing, and containers that are not objects', async () => {
        const request = podWithImages(null, 7);
        setAt(request.object, 'spec.initContainers', ['nginx:latest']);
        setAt(request.object, 'spec.ephemeralContainers', [{ name: 'debug' }]);
        const result = await runPlugin(plugin, request);
        assert.equal(result.allowed, true, result.denial?.message);
      });

      it('allows a Pod without spec, or with a null one', async () => {
        for (const spec of [undefined, null]) {
          const request = requestOf(podCreate());
          setAt(request.object, 'spec', spec);
          const result = await runPlugin(plugin, request, { settings: MIRROR_HUB });
          assert.deepEqual({ allowed: result.allowed, patch: result.patch }, { allowed: true, patch: [] });
        }
      });
    });
  });
});
