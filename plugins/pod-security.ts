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
  podSpecResources,
  settingsObject,
  type KubeObject,
} from '../server/plugin-api/index.js';
import { containersOf, podSpecOf, type ContainerAt, type PodSpecAt } from './lib/pod-spec.js';

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

// Each check adds the violations it finds to `found`: no list per container (a Pod may have thousands).

function checkHostNamespaces(pod: PodSpecAt, found: string[]): void {
  for (const field of HOST_NAMESPACES) {
    if (pod.spec[field] === true) found.push(`${pod.path}.${field}: sharing the host's namespaces is not allowed`);
  }
}

function checkHostPaths(pod: PodSpecAt, found: string[]): void {
  const { volumes } = pod.spec;
  if (!Array.isArray(volumes)) return;
  volumes.forEach((volume, i) => {
    if (!volume.hostPath) return;
    const name = typeof volume.name === 'string' ? ` (volume "${volume.name}")` : '';
    found.push(`${pod.path}.volumes[${i}].hostPath: hostPath volumes are not allowed${name}`);
  });
}

/** The container's own securityContext: privilege, escalation and added capabilities. */
function checkContainer(at: ContainerAt, settings: PodSecuritySettings, found: string[]): void {
  const context = at.container.securityContext;
  if (!context) return;
  if (!settings.allowPrivileged && context.privileged === true) {
    found.push(`${at.path}.securityContext.privileged: privileged containers are not allowed`);
  }
  if (!settings.allowPrivilegeEscalation && context.allowPrivilegeEscalation === true) {
    found.push(`${at.path}.securityContext.allowPrivilegeEscalation: privilege escalation is not allowed`);
  }
  const added = context.capabilities?.add;
  if (!Array.isArray(added)) return;
  const refused = added.filter((name) => !settings.allowedCapabilities.has(normalizeCapability(name)));
  if (refused.length > 0) {
    const noun = refused.length === 1 ? 'capability' : 'capabilities';
    const verb = refused.length === 1 ? 'is' : 'are';
    found.push(`${at.path}.securityContext.capabilities.add: ${noun} ${refused.join(', ')} ${verb} not allowed`);
  }
}

/**
 * A container runs as non-root when its effective runAsUser (its own, else the pod's) is non-zero, or,
 * without one, when its effective runAsNonRoot is true — then the kubelet refuses to start a root image.
 * An inherited `runAsUser: 0` is reported once, where it is set.
 */
function checkRunAsNonRoot(pod: PodSpecAt, containers: readonly ContainerAt[], found: string[]): void {
  const podContext = pod.spec.securityContext;
  let inheritedRoot = false;
  for (const at of containers) {
    const context = at.container.securityContext;
    const user = context?.runAsUser ?? podContext?.runAsUser;
    if (context?.runAsUser === 0) {
      found.push(`${at.path}.securityContext.runAsUser: running as root (user 0) is not allowed`);
    } else if (user === 0) {
      if (!inheritedRoot) found.push(`${pod.path}.securityContext.runAsUser: running as root (user 0) is not allowed`);
      inheritedRoot = true;
    } else if (user == null && (context?.runAsNonRoot ?? podContext?.runAsNonRoot) !== true) {
      found.push(`${at.path}: must run as non-root: set securityContext.runAsNonRoot: true or a non-zero runAsUser`);
    }
  }
}

function violations(object: Readonly<KubeObject> | undefined, settings: PodSecuritySettings): string[] {
  const pod = podSpecOf(object);
  if (!pod) return [];
  const found: string[] = [];
  if (!settings.allowHostNamespaces) checkHostNamespaces(pod, found);
  if (!settings.allowHostPath) checkHostPaths(pod, found);
  const containers = containersOf(pod);
  for (const at of containers) checkContainer(at, settings, found);
  if (settings.requireRunAsNonRoot) checkRunAsNonRoot(pod, containers, found);
  return found;
}

export default definePlugin({
  name: 'pod-security',
  description: 'Refuses privileged containers, host access and containers that may run as root',
  match: podSpecResources('pods/ephemeralcontainers').create().update(),
  settings: parseSettings,
  setup: (settings) => ({
    validate({ object, oldObject }) {
      const existing = new Set(violations(oldObject, settings));
      const introduced = violations(object, settings).filter((violation) => !existing.has(violation));
      return introduced.length === 0 ? allow() : deny(introduced.join('; '));
    },
  }),
});
