/**
 * Keeps container images to trusted registries and pinned versions, and optionally pulls them through a
 * mirror. The mutate phase rewrites references to mirrored registries; the validate phase judges each
 * image as it will be pulled, so an image whose mirror is allowed passes even before it was rewritten.
 *
 * On UPDATE only images the request changes are touched or judged: rewriting the image of a running Pod
 * restarts its container, and refusing an unchanged image would block unrelated edits (labels, finalizers)
 * of objects created before the policy.
 */
import {
  SettingsError,
  allow,
  definePlugin,
  deny,
  optionalBoolean,
  optionalStringList,
  optionalStringMap,
  podSpecResources,
  settingsObject,
  type KubeObject,
} from '../server/plugin-api/index.js';
import {
  formatImageRef,
  isRegistryPath,
  looksLikeRegistry,
  normalizeRegistry,
  parseImageRef,
  type ImageRef,
} from './lib/image-ref.js';
import { containersIn, type ContainerAt } from './lib/pod-spec.js';

export interface ImagePolicySettings {
  /** `registry[/repository path][/]` prefixes, matched at a path boundary; empty allows any registry. */
  readonly allowedRegistries: readonly string[];
  readonly forbidLatest: boolean;
  /** Registry host → mirror (a host, optionally with a path). */
  readonly mirrors: ReadonlyMap<string, string>;
}

function parseAllowed(settings: Record<string, unknown>): readonly string[] {
  const allowed = optionalStringList(settings, 'allowedRegistries') ?? [];
  return allowed.map((entry, i) => {
    if (!isRegistryPath(entry.endsWith('/') ? entry.slice(0, -1) : entry)) {
      throw new SettingsError(
        `allowedRegistries[${i}]`,
        'expected a registry host, optionally followed by a repository path' +
          ` (e.g. registry.k8s.io, docker.io/library or ghcr.io/acme/), got "${entry}"`,
      );
    }
    const slash = entry.indexOf('/');
    return slash === -1 ? normalizeRegistry(entry) : normalizeRegistry(entry.slice(0, slash)) + entry.slice(slash);
  });
}

function parseMirrors(settings: Record<string, unknown>): ReadonlyMap<string, string> {
  const mirrors = Object.entries(optionalStringMap(settings, 'mirrors') ?? {});
  for (const [registry, mirror] of mirrors) {
    if (!looksLikeRegistry(registry)) {
      throw new SettingsError(`mirrors.${registry}`, 'expected a registry host as the key, e.g. docker.io or quay.io');
    }
    if (!isRegistryPath(mirror)) {
      throw new SettingsError(
        `mirrors.${registry}`,
        `expected a registry host, optionally with a path (e.g. mirror.acme.io or harbor.acme.io/dockerhub), got "${mirror}"`,
      );
    }
  }
  return new Map(mirrors.map(([registry, mirror]) => [normalizeRegistry(registry), mirror]));
}

function parseSettings(raw: unknown): ImagePolicySettings {
  const settings = settingsObject(raw, ['allowedRegistries', 'forbidLatest', 'mirrors']);
  return {
    allowedRegistries: parseAllowed(settings),
    forbidLatest: optionalBoolean(settings, 'forbidLatest', true),
    mirrors: parseMirrors(settings),
  };
}

/** The reference pulled through its registry's mirror, or undefined when there is no mirror for it. */
function mirrored(image: string, mirrors: ReadonlyMap<string, string>): string | undefined {
  const ref = parseImageRef(image);
  return ref && mirroredRef(ref, mirrors);
}

function mirroredRef(ref: ImageRef, mirrors: ReadonlyMap<string, string>): string | undefined {
  const mirror = mirrors.get(ref.registry);
  return mirror ? formatImageRef(ref, mirror) : undefined;
}

/** A prefix matches whole path segments only: `registry.k8s.io` must not admit `registry.k8s.io.evil.com/x`. */
function isAllowed(name: string, allowed: readonly string[]): boolean {
  return (
    allowed.length === 0 ||
    allowed.some((prefix) => name === prefix || name.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`))
  );
}

interface ImageJudgement {
  readonly problems: readonly string[];
  readonly registryRefused: boolean;
}

/** What is wrong with one image reference as it will be pulled (after mirroring). */
function judgeImage(image: string, settings: ImagePolicySettings): ImageJudgement {
  const written = parseImageRef(image);
  const effective = (written && mirroredRef(written, settings.mirrors)) ?? image;
  // Parsed again only when mirrored: every validating review of a workload judges each of its images.
  const ref = effective === image ? written : parseImageRef(effective);
  if (!ref) return { problems: ['not a valid image reference'], registryRefused: false };
  const problems: string[] = [];
  if (settings.forbidLatest && ref.digest === undefined && ref.tag === 'latest') {
    problems.push(
      ref.tagImplied ? 'tag latest is not allowed (no tag or digest means latest)' : 'tag latest is not allowed',
    );
  }
  const registryRefused = !isAllowed(ref.name, settings.allowedRegistries);
  if (registryRefused) {
    const via = effective === image ? '' : ` (mirrored to "${effective}")`;
    problems.push(`${ref.name}${via} is not in an allowed registry`);
  }
  return { problems, registryRefused };
}

/** Calls `visit` for each container of `object` whose image is new or changed compared with `oldObject`. */
function forEachChangedImage(
  object: Readonly<KubeObject> | undefined,
  oldObject: Readonly<KubeObject> | undefined,
  visit: (image: string, at: ContainerAt) => void,
): void {
  // Container path → image on UPDATE; on CREATE nothing is compared, so no container's path is written out.
  const before = oldObject && new Map(containersIn(oldObject).map(({ path, container }) => [path, container.image]));
  for (const at of containersIn(object)) {
    const { image } = at.container;
    if (typeof image === 'string' && before?.get(at.path) !== image) visit(image, at);
  }
}

export default definePlugin({
  name: 'image-policy',
  description: 'Allows images from trusted registries only, forbids :latest, and can rewrite images to a mirror',
  match: podSpecResources('pods/ephemeralcontainers').create().update(),
  settings: parseSettings,
  setup: (settings) => ({
    // Without mirrors there is nothing to rewrite: no mutate step at all, rather than one per review doing nothing.
    mutate:
      settings.mirrors.size === 0
        ? undefined
        : ({ object, oldObject, annotate }) => {
            let rewritten = 0;
            forEachChangedImage(object, oldObject, (image, { container }) => {
              const target = mirrored(image, settings.mirrors);
              if (target === undefined) return;
              container.image = target;
              rewritten += 1;
            });
            if (rewritten > 0) annotate('rewritten', String(rewritten));
          },
    validate({ object, oldObject }) {
      const messages: string[] = [];
      let registryRefused = false;
      forEachChangedImage(object, oldObject, (image, at) => {
        const judged = judgeImage(image, settings);
        if (judged.problems.length === 0) return;
        messages.push(`${at.path} image "${image}": ${judged.problems.join(', ')}`);
        registryRefused ||= judged.registryRefused;
      });
      if (messages.length === 0) return allow();
      if (registryRefused) messages.push(`allowed registries: ${settings.allowedRegistries.join(', ')}`);
      return deny(messages.join('; '));
    },
  }),
});
