/**
 * Refuses pods and workloads that could take over their node: privileged containers, privilege escalation,
 * added capabilities, hostPath volumes, host namespaces, and containers that may run as root.
 * Run it with `mode: warn` first to see what an existing cluster would be refused.
 *
 * On UPDATE only violations the request introduces are reported, so an object created before the policy
 * can still be labelled, scaled or released from its finalizers; any new violation is refused.
 */
import {
  SettingsError,
  allow,
  definePlugin,
  deny,
  optionalBoolean,
  optionalStringList,
  settingsObject,
  type KubeObject,
} from '../server/plugin-api/index.js';
import {
  containersOf,
  isObject,
  objectField,
  podSpecsOf,
  type ContainerAt,
  type PodSpecAt,
  podSpecMatch,
} from './lib/pod-spec.js';

export interface PodSecuritySettings {
  readonly allowPrivileged: boolean;
  readonly allowPrivilegeEscalation: boolean;
  readonly allowHostPath: boolean;
  readonly allowHostNamespaces: boolean;
  readonly requireRunAsNonRoot: boolean;
  /** Normalised names (`NET_ADMIN`) a container may add; always includes NET_BIND_SERVICE. */
  readonly allowedCapabilities: ReadonlySet<string>;
}

/** Binding ports below 1024 is harmless and what the restricted Pod Security Standard allows too. */
const ALWAYS_ALLOWED_CAPABILITY = 'NET_BIND_SERVICE';
const CAPABILITY = /^[A-Z0-9_]+$/;
const HOST_NAMESPACES = ['hostNetwork', 'hostPID', 'hostIPC'] as const;

/** Runtimes accept `CAP_NET_ADMIN` and `net_admin` alike. */
function normalizeCapability(name: string): string {
  const upper = name.toUpperCase();
  return upper.startsWith('CAP_') ? upper.slice('CAP_'.length) : upper;
}

function parseCapabilities(settings: Record<string, unknown>): ReadonlySet<string> {
  const names = optionalStringList(settings, 'allowedCapabilities') ?? [];
  const normalized = names.map((name, i) => {
    const capability = normalizeCapability(name);
    if (!CAPABILITY.test(capability)) {
      throw new SettingsError(
        `allowedCapabilities[${i}]`,
        `expected a capability name such as NET_ADMIN, got "${name}"`,
      );
    }
    return capability;
  });
  return new Set([ALWAYS_ALLOWED_CAPABILITY, ...normalized]);
}

function parseSettings(raw: unknown): PodSecuritySettings {
  const settings = settingsObject(raw, [
    'allowPrivileged',
    'allowPrivilegeEscalation',
    'allowHostPath',
    'allowHostNamespaces',
    'requireRunAsNonRoot',
    'allowedCapabilities',
  ]);
  return {
    allowPrivileged: optionalBoolean(settings, 'allowPrivileged', false),
    allowPrivilegeEscalation: optionalBoolean(settings, 'allowPrivilegeEscalation', false),
    allowHostPath: optionalBoolean(settings, 'allowHostPath', false),
    allowHostNamespaces: optionalBoolean(settings, 'allowHostNamespaces', false),
    requireRunAsNonRoot: optionalBoolean(settings, 'requireRunAsNonRoot', true),
    allowedCapabilities: parseCapabilities(settings),
  };
}

function hostNamespaceViolations(pod: PodSpecAt): string[] {
  return HOST_NAMESPACES.filter((field) => pod.spec[field] === true).map(
    (field) => `${pod.path}.${field}: sharing the host's namespaces is not allowed`,
  );
}

function hostPathViolations(pod: PodSpecAt): string[] {
  const volumes: unknown = pod.spec.volumes;
  if (!Array.isArray(volumes)) return [];
  return volumes.flatMap((volume: unknown, i) => {
    if (!isObject(volume) || volume.hostPath === undefined || volume.hostPath === null) return [];
    const name = typeof volume.name === 'string' ? ` (volume "${volume.name}")` : '';
    return [`${pod.path}.volumes[${i}].hostPath: hostPath volumes are not allowed${name}`];
  });
}

function containerViolations({ container, path }: ContainerAt, settings: PodSecuritySettings): string[] {
  const context = objectField(container, 'securityContext') ?? {};
  const at = `${path}.securityContext`;
  const found: string[] = [];
  if (!settings.allowPrivileged && context.privileged === true) {
    found.push(`${at}.privileged: privileged containers are not allowed`);
  }
  if (!settings.allowPrivilegeEscalation && context.allowPrivilegeEscalation === true) {
    found.push(`${at}.allowPrivilegeEscalation: privilege escalation is not allowed`);
  }
  const added: unknown = objectField(context, 'capabilities')?.add;
  const refused = (Array.isArray(added) ? added : []).filter(
    (name: unknown): name is string =>
      typeof name === 'string' && !settings.allowedCapabilities.has(normalizeCapability(name)),
  );
  if (refused.length > 0) {
    const noun = refused.length === 1 ? 'capability' : 'capabilities';
    const verb = refused.length === 1 ? 'is' : 'are';
    found.push(`${at}.capabilities.add: ${noun} ${refused.join(', ')} ${verb} not allowed`);
  }
  return found;
}

/**
 * A container runs as non-root when its effective runAsUser (its own, else the pod's) is non-zero, or,
 * without one, when its effective runAsNonRoot is true — then the kubelet refuses to start a root image.
 * An inherited `runAsUser: 0` is reported once, where it is set.
 */
function runAsRootViolations(pod: PodSpecAt, containers: readonly ContainerAt[]): string[] {
  const podContext = objectField(pod.spec, 'securityContext') ?? {};
  const found = new Set<string>();
  for (const { container, path } of containers) {
    const own = objectField(container, 'securityContext') ?? {};
    const user =
      typeof own.runAsUser === 'number'
        ? { uid: own.runAsUser, at: `${path}.securityContext.runAsUser` }
        : typeof podContext.runAsUser === 'number'
          ? { uid: podContext.runAsUser, at: `${pod.path}.securityContext.runAsUser` }
          : undefined;
    const nonRoot = typeof own.runAsNonRoot === 'boolean' ? own.runAsNonRoot : podContext.runAsNonRoot === true;
    if (user?.uid === 0) {
      found.add(`${user.at}: running as root (user 0) is not allowed`);
    } else if (user === undefined && !nonRoot) {
      found.add(`${path}: must run as non-root: set securityContext.runAsNonRoot: true or a non-zero runAsUser`);
    }
  }
  return [...found];
}

function podViolations(pod: PodSpecAt, settings: PodSecuritySettings): string[] {
  const containers = containersOf(pod);
  return [
    ...(settings.allowHostNamespaces ? [] : hostNamespaceViolations(pod)),
    ...(settings.allowHostPath ? [] : hostPathViolations(pod)),
    ...containers.flatMap((container) => containerViolations(container, settings)),
    ...(settings.requireRunAsNonRoot ? runAsRootViolations(pod, containers) : []),
  ];
}

function violations(object: Readonly<KubeObject> | undefined, settings: PodSecuritySettings): string[] {
  return podSpecsOf(object).flatMap((pod) => podViolations(pod, settings));
}

export default definePlugin({
  name: 'pod-security',
  description: 'Refuses privileged containers, host access and containers that may run as root',
  match: podSpecMatch(['CREATE', 'UPDATE'], ['pods/ephemeralcontainers']),
  settings: parseSettings,
  validate({ object, oldObject, settings }) {
    const existing = new Set(violations(oldObject, settings));
    const introduced = violations(object, settings).filter((violation) => !existing.has(violation));
    return introduced.length === 0 ? allow() : deny(introduced.join('; '));
  },
});
