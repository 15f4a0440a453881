import assert from 'node:assert/strict';
import {
  formatImageRef,
  isRegistryPath,
  looksLikeRegistry,
  parseImageRef,
  type ImageRef,
} from '../../plugins/lib/image-ref.js';

const DIGEST = 'sha256:2bb6a2e1d3e0c1a7e4a3b8c6f0d9e5a1b7c3d2e4f6a8b0c2d4e6f8a0b2c4d6e8';

describe('lib/image-ref', () => {
  describe('parseImageRef()', () => {
    const cases: ReadonlyArray<[string, string, ImageRef]> = [
      [
        'a single Docker Hub name as library/<name>:latest',
        'nginx',
        {
          registry: 'docker.io',
          repository: 'library/nginx',
          name: 'docker.io/library/nginx',
          tag: 'latest',
          tagImplied: true,
          digest: undefined,
        },
      ],
      [
        'an explicit latest tag as written',
        'nginx:latest',
        {
          registry: 'docker.io',
          repository: 'library/nginx',
          name: 'docker.io/library/nginx',
          tag: 'latest',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'a Docker Hub user repository without library/',
        'bitnami/redis:7.2',
        {
          registry: 'docker.io',
          repository: 'bitnami/redis',
          name: 'docker.io/bitnami/redis',
          tag: '7.2',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'docker.io/<name> as an official image',
        'docker.io/nginx:1.25',
        {
          registry: 'docker.io',
          repository: 'library/nginx',
          name: 'docker.io/library/nginx',
          tag: '1.25',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'index.docker.io as docker.io',
        'index.docker.io/library/nginx:1.25',
        {
          registry: 'docker.io',
          repository: 'library/nginx',
          name: 'docker.io/library/nginx',
          tag: '1.25',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'a registry with a dot',
        'registry.k8s.io/pause:3.9',
        {
          registry: 'registry.k8s.io',
          repository: 'pause',
          name: 'registry.k8s.io/pause',
          tag: '3.9',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'a registry with a port, keeping the tag apart from the port',
        'localhost:5000/app:1.0',
        {
          registry: 'localhost:5000',
          repository: 'app',
          name: 'localhost:5000/app',
          tag: '1.0',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'a registry with a port and no tag',
        'localhost:5000/app',
        {
          registry: 'localhost:5000',
          repository: 'app',
          name: 'localhost:5000/app',
          tag: 'latest',
          tagImplied: true,
          digest: undefined,
        },
      ],
      [
        'localhost without a port as a registry',
        'localhost/app:2',
        {
          registry: 'localhost',
          repository: 'app',
          name: 'localhost/app',
          tag: '2',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'an IPv6 registry',
        '[::1]:5000/app:1',
        {
          registry: '[::1]:5000',
          repository: 'app',
          name: '[::1]:5000/app',
          tag: '1',
          tagImplied: false,
          digest: undefined,
        },
      ],
      [
        'a digest without a tag, implying no tag',
        `ghcr.io/acme/team/app@${DIGEST}`,
        {
          registry: 'ghcr.io',
          repository: 'acme/team/app',
          name: 'ghcr.io/acme/team/app',
          tag: undefined,
          tagImplied: false,
          digest: DIGEST,
        },
      ],
      [
        'a tag and a digest',
        `nginx:1.25@${DIGEST}`,
        {
          registry: 'docker.io',
          repository: 'library/nginx',
          name: 'docker.io/library/nginx',
          tag: '1.25',
          tagImplied: false,
          digest: DIGEST,
        },
      ],
    ];
    for (const [description, image, expected] of cases) {
      it(`reads ${description}: ${image}`, () => {
        assert.deepEqual(parseImageRef(image), expected);
      });
    }

    const invalid = [
      '',
      ' nginx',
      'Nginx:1.0',
      'nginx:',
      'nginx:1:2',
      'nginx@sha256:abc',
      'nginx@',
      'ghcr.io//app',
      'app/',
    ];
    for (const image of invalid) {
      it(`refuses ${JSON.stringify(image)}`, () => {
        assert.equal(parseImageRef(image), undefined);
      });
    }
  });

  describe('formatImageRef()', () => {
    const format = (image: string, registry?: string): string => {
      const ref = parseImageRef(image);
      assert.ok(ref, `${image} parses`);
      return formatImageRef(ref, registry);
    };

    it('writes the fully qualified reference', () => {
      assert.equal(format('nginx:1.25'), 'docker.io/library/nginx:1.25');
    });

    it('keeps an implied latest implied', () => {
      assert.equal(format('busybox'), 'docker.io/library/busybox');
    });

    it('keeps the tag and the digest', () => {
      assert.equal(format(`nginx:1.25@${DIGEST}`), `docker.io/library/nginx:1.25@${DIGEST}`);
    });

    it('puts a mirror, with its path, in place of the registry', () => {
      assert.equal(format('nginx:1.25', 'harbor.acme.io/dockerhub'), 'harbor.acme.io/dockerhub/library/nginx:1.25');
    });
  });

  describe('looksLikeRegistry()', () => {
    it('accepts hosts with a dot or a port, and localhost', () => {
      assert.deepEqual(['ghcr.io', 'localhost:5000', 'localhost', 'registry:5000'].map(looksLikeRegistry), [
        true,
        true,
        true,
        true,
      ]);
    });

    it('refuses Docker Hub namespaces and things that are not hosts', () => {
      assert.deepEqual(['library', 'acme', 'https:', 'a b.io'].map(looksLikeRegistry), [false, false, false, false]);
    });
  });

  describe('isRegistryPath()', () => {
    it('accepts a registry with an optional repository path', () => {
      assert.deepEqual(['registry.k8s.io', 'docker.io/library', 'harbor.acme.io/dockerhub'].map(isRegistryPath), [
        true,
        true,
        true,
      ]);
    });

    it('refuses a name without a registry, a URL and an empty segment', () => {
      assert.deepEqual(['nginx', 'https://mirror.acme.io', 'ghcr.io//acme', 'ghcr.io/acme/'].map(isRegistryPath), [
        false,
        false,
        false,
        false,
      ]);
    });
  });
});
