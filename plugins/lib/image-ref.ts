/**
 * Container image references as the container runtime resolves them (the rules of
 * github.com/distribution/reference): `nginx` is `docker.io/library/nginx:latest`.
 */

export interface ImageRef {
  /** Registry host (with port), `docker.io` when the reference names none. */
  readonly registry: string;
  /** Repository path in the registry; single names on docker.io get `library/`. */
  readonly repository: string;
  /** `registry/repository`, e.g. `docker.io/library/nginx`. */
  readonly name: string;
  /** The tag; `latest` when the reference has neither tag nor digest, because that is what gets pulled. */
  readonly tag: string | undefined;
  /** True when `tag` is the implied `latest` rather than written in the reference. */
  readonly tagImplied: boolean;
  /** `algorithm:hex`, when pinned. */
  readonly digest: string | undefined;
}

export const DEFAULT_REGISTRY = 'docker.io';

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d+)?$/;

/** Whether the first path segment of a reference names a registry rather than a Docker Hub namespace. */
export function looksLikeRegistry(segment: string): boolean {
  return (segment.includes('.') || segment.includes(':') || segment === 'localhost') && HOST.test(segment);
}

/** `host[/path]` (e.g. `harbor.acme.io/dockerhub`): a registry, or a repository path inside one. */
export function isRegistryPath(text: string): boolean {
  const [host = '', ...path] = text.split('/');
  return looksLikeRegistry(host) && path.every((component) => PATH_COMPONENT.test(component));
}

/** `index.docker.io` is Docker Hub's legacy name; both resolve to the same images. */
export function normalizeRegistry(registry: string): string {
  return registry === 'index.docker.io' ? DEFAULT_REGISTRY : registry;
}

function splitName(name: string): { registry: string; repository: string } {
  const slash = name.indexOf('/');
  const first = name.slice(0, slash);
  if (slash !== -1 && looksLikeRegistry(first)) {
    const registry = normalizeRegistry(first);
    const path = name.slice(slash + 1);
    return { registry, repository: registry === DEFAULT_REGISTRY && !path.includes('/') ? `library/${path}` : path };
  }
  return { registry: DEFAULT_REGISTRY, repository: name.includes('/') ? name : `library/${name}` };
}

/** Parses an image reference; undefined when the runtime would refuse it as an invalid reference. */
export function parseImageRef(image: string): ImageRef | undefined {
  const at = image.indexOf('@');
  const digest = at === -1 ? undefined : image.slice(at + 1);
  const named = at === -1 ? image : image.slice(0, at);
  const colon = named.lastIndexOf(':');
  const hasTag = colon > named.lastIndexOf('/');
  const writtenTag = hasTag ? named.slice(colon + 1) : undefined;
  const { registry, repository } = splitName(hasTag ? named.slice(0, colon) : named);

  if (digest !== undefined && !DIGEST.test(digest)) return undefined;
  if (writtenTag !== undefined && !TAG.test(writtenTag)) return undefined;
  if (!repository.split('/').every((component) => PATH_COMPONENT.test(component))) return undefined;

  const tagImplied = writtenTag === undefined && digest === undefined;
  return {
    registry,
    repository,
    name: `${registry}/${repository}`,
    tag: tagImplied ? 'latest' : writtenTag,
    tagImplied,
    digest,
  };
}

/**
 * The fully qualified reference, with `registry` in place of the reference's own when given (a mirror,
 * which may carry a path: `harbor.acme.io/dockerhub`). An implied `latest` stays implied.
 */
export function formatImageRef(ref: ImageRef, registry = ref.registry): string {
  const tag = ref.tag !== undefined && !ref.tagImplied ? `:${ref.tag}` : '';
  const digest = ref.digest !== undefined ? `@${ref.digest}` : '';
  return `${registry}/${ref.repository}${tag}${digest}`;
}
