// The restricted profile of the Pod Security Standards written as CEL validations over a variable of all the
// containers: the `cel` scenario's policy (bench/cel.mjs) and the ten CEL validations of the `policyTests`
// scenario's suite (bench/policy-tests.mjs, as a ValidatingAdmissionPolicy).
const SC = 'object.spec.?securityContext';
export const CONTAINERS =
  'object.spec.containers + object.spec.?initContainers.orValue([]) + object.spec.?ephemeralContainers.orValue([])';
/** The restricted profile of the Pod Security Standards, one validation a rule, as a policy would write them. */
export const RULES = [
  // Host namespaces
  '!object.spec.?hostNetwork.orValue(false) && !object.spec.?hostPID.orValue(false) && !object.spec.?hostIPC.orValue(false)',
  // Privileged containers
  'variables.containers.all(c, !c.?securityContext.?privileged.orValue(false))',
  // Host ports
  'variables.containers.all(c, c.?ports.orValue([]).all(p, p.?hostPort.orValue(0) == 0))',
  // Volume types
  'object.spec.?volumes.orValue([]).all(v, has(v.configMap) || has(v.csi) || has(v.downwardAPI) || has(v.emptyDir) || ' +
    'has(v.ephemeral) || has(v.persistentVolumeClaim) || has(v.projected) || has(v.secret))',
  // Sysctls
  `${SC}.?sysctls.orValue([]).all(s, s.name in ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', ` +
    `'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', ` +
    `'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', ` +
    `'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes'])`,
  // Privilege escalation
  'variables.containers.all(c, c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false)',
  // Running as non-root
  `variables.containers.all(c, c.?securityContext.?runAsNonRoot.orValue(${SC}.?runAsNonRoot.orValue(false)))`,
  // Running as non-root user
  `${SC}.?runAsUser.orValue(1) != 0 && variables.containers.all(c, c.?securityContext.?runAsUser.orValue(1) != 0)`,
  // Seccomp
  `variables.containers.all(c, c.?securityContext.?seccompProfile.?type.orValue(${SC}.?seccompProfile.?type.orValue('')) ` +
    `in ['RuntimeDefault', 'Localhost'])`,
  // Capabilities
  "variables.containers.all(c, 'ALL' in c.?securityContext.?capabilities.?drop.orValue([]) && " +
    "c.?securityContext.?capabilities.?add.orValue([]).all(a, a == 'NET_BIND_SERVICE'))",
];
