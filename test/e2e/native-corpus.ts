/**
 * A seeded corpus of objects for the native-policy differential e2e: Pods, Deployments, ConfigMaps and Services
 * with random names, labels, containers, images, resources and securityContexts, every one valid for the
 * apiserver's own validation (so what refuses it is admission). The same seed gives the same corpus.
 */

/** mulberry32: a small, fast, seeded generator (not for secrets). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface CorpusObject {
  /** The REST collection it is created in: `/api/v1/namespaces/<ns>/pods`, … with `<ns>` for the namespace. */
  readonly collection: string;
  readonly body: Record<string, unknown>;
}

type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const chance = (random: Random, p: number): boolean => random() < p;

const IMAGES = [
  'registry.k8s.io/pause:3.9',
  'registry.k8s.io/pause:3.10',
  'ghcr.io/acme/web:2.0.1',
  'registry.k8s.io/pause:3.9',
  'registry.k8s.io/pause:latest',
  'ghcr.io/acme/api:1.4.2',
  'docker.io/library/nginx:latest',
  'docker.io/library/nginx:1.27',
  'quay.io/team/worker',
  'pause',
];
const MEMORY = ['32Mi', '256Mi', '1Gi', '1.5Gi', '2Gi', '700000k', '0.5Gi'];
const CPU = ['50m', '250m', '1', '2', '1500m'];

function labels(random: Random): Record<string, string> {
  const out: Record<string, string> = {};
  if (chance(random, 0.9)) out.app = pick(random, ['web', 'api', 'db', 'Web', 'cache', 'web']);
  if (chance(random, 0.85)) out.team = pick(random, ['payments', 'search', 'platform', 'Search-2']);
  if (chance(random, 0.3)) out.tier = pick(random, ['canary', 'stable']);
  if (chance(random, 0.08)) out.exempt = 'true';
  return out;
}

function securityContext(random: Random): Record<string, unknown> | undefined {
  if (chance(random, 0.3)) return undefined;
  const sc: Record<string, unknown> = {};
  if (chance(random, 0.5)) sc.runAsNonRoot = chance(random, 0.7);
  if (chance(random, 0.4)) sc.runAsUser = pick(random, [0, 1000, 65534]);
  if (chance(random, 0.3)) sc.privileged = chance(random, 0.3);
  if (chance(random, 0.3)) sc.allowPrivilegeEscalation = chance(random, 0.5);
  return sc;
}

function resources(random: Random): Record<string, unknown> {
  const limits: Record<string, string> = {};
  const requests: Record<string, string> = {};
  if (chance(random, 0.7)) limits.memory = pick(random, MEMORY);
  if (chance(random, 0.5)) limits.cpu = pick(random, CPU);
  if (limits.cpu === undefined && chance(random, 0.4)) requests.cpu = pick(random, ['10m', '100m', '500m']);
  const out: Record<string, unknown> = {};
  if (Object.keys(limits).length > 0) out.limits = limits;
  // A request may not exceed its limit: a cpu request only without a cpu limit.
  if (Object.keys(requests).length > 0) out.requests = requests;
  return out;
}

function containers(random: Random): Record<string, unknown>[] {
  const count = 1 + Math.floor(random() * random() * 3);
  return Array.from({ length: count }, (_, i) => {
    const sc = securityContext(random);
    return {
      name: `c${i}`,
      image: pick(random, IMAGES),
      resources: resources(random),
      ...(sc ? { securityContext: sc } : {}),
    };
  });
}

function podSpec(random: Random): Record<string, unknown> {
  return {
    containers: containers(random),
    ...(chance(random, 0.3) ? { securityContext: { runAsNonRoot: chance(random, 0.5) } } : {}),
    ...(chance(random, 0.3) ? { hostNetwork: true } : {}),
  };
}

/** An object of `collection` with random labels, then the fields `rest` draws (in that order, for the seed). */
function corpusObject(
  random: Random,
  collection: string,
  type: { readonly apiVersion: string; readonly kind: string },
  name: string,
  rest: () => Record<string, unknown>,
): CorpusObject {
  const metadata = { name, labels: labels(random) };
  return { collection, body: { ...type, metadata, ...rest() } };
}

function pod(random: Random, name: string): CorpusObject {
  return corpusObject(random, '/api/v1/namespaces/<ns>/pods', { apiVersion: 'v1', kind: 'Pod' }, name, () => ({
    spec: podSpec(random),
  }));
}

function deployment(random: Random, name: string): CorpusObject {
  const templateLabels = { ...labels(random), 'corpus/selector': name };
  const type = { apiVersion: 'apps/v1', kind: 'Deployment' };
  return corpusObject(random, '/apis/apps/v1/namespaces/<ns>/deployments', type, name, () => ({
    spec: {
      replicas: Math.floor(random() * 10),
      selector: { matchLabels: { 'corpus/selector': name } },
      template: { metadata: { labels: templateLabels }, spec: podSpec(random) },
    },
  }));
}

function configMap(random: Random, name: string): CorpusObject {
  const data: Record<string, string> = {};
  const keys = Math.floor(random() * 7);
  for (let i = 0; i < keys; i++) {
    data[pick(random, ['url', 'mode', 'level', 'endpoint', 'Secret', 'note']) + i] = pick(random, [
      'https://api.example.com/v1',
      'not a url',
      'debug',
      'password=hunter2',
      'PASSWORD: x',
      '10.0.0.1',
      '',
    ]);
  }
  const type = { apiVersion: 'v1', kind: 'ConfigMap' };
  return corpusObject(random, '/api/v1/namespaces/<ns>/configmaps', type, name, () => ({ data }));
}

function service(random: Random, name: string): CorpusObject {
  const count = 1 + Math.floor(random() * 3);
  const ports = Array.from({ length: count }, (_, i) => ({
    name: `${pick(random, ['http', 'grpc', 'metrics', 'admin'])}-${i}`,
    port: pick(random, [80, 443, 8080, 9090, 22, 3306, 1 + Math.floor(random() * 65534)]),
    protocol: pick(random, ['TCP', 'TCP', 'UDP']),
  }));
  // The same port and protocol twice is refused by the apiserver's validation: keep the first.
  const unique = ports.filter((p, i) => ports.findIndex((q) => q.port === p.port && q.protocol === p.protocol) === i);
  const type = { apiVersion: 'v1', kind: 'Service' };
  return corpusObject(random, '/api/v1/namespaces/<ns>/services', type, name, () => ({
    spec: {
      ...(chance(random, 0.3) ? { clusterIP: 'None' } : {}),
      selector: { app: pick(random, ['web', 'api']) },
      ports: unique,
    },
  }));
}

/** `count` objects, the four kinds in turn, from `seed`. */
export function generateCorpus(seed: number, count: number): CorpusObject[] {
  const random = seeded(seed);
  const makers = [pod, deployment, configMap, service];
  return Array.from({ length: count }, (_, i) => makers[i % makers.length]!(random, `corpus-${i}`));
}
