/**
 * The embedded default configuration: used when no gateway.yaml exists at the default location.
 * It is the repository's gateway.yaml, byte for byte (a unit test keeps them equal).
 */
export const DEFAULT_CONFIG_YAML = `# admission-gateway configuration — every field is optional; docs/configuration.md describes them all.
# ORDER MATTERS: mutating steps run one after another in this order; validating steps run in parallel.
# A first install blocks nobody: the mutating steps are \`failurePolicy: Ignore\` (so is the rendered mutating
# webhook: an unreachable gateway never blocks a write) and the validating plugins start in \`warn\` mode. Read
# the warnings (kubectl prints them), then switch an entry to \`mode: enforce\`.
apiVersion: admissiongateway.io/v1alpha1
kind: GatewayConfig
server:
  port: 8443 # webhook, HTTPS
  opsPort: 9090 # /metrics /chain /openapi/v3 /explain: plain HTTP on 127.0.0.1 without a cluster; HTTPS, callers checked by the apiserver, in one (opsAuth)
  healthPort: 8081 # /healthz /readyz for the kubelet, plain HTTP; 127.0.0.1 only without a cluster (healthHost)
  tls:
    certFile: certs/tls.crt # generated (with certs/ca.crt) on first start when missing
    keyFile: certs/tls.key
  maxRequestBytes: 7340032
  deadlineMarginMs: 250
  defaultTimeoutSeconds: 10
kube:
  enabled: auto # watch AdmissionProvider resources when a kubeconfig or service account exists
  watchProviders: true
log:
  level: info
chain:
  - plugin: default-labels
    failurePolicy: Ignore
    match: # namespaced workloads only (the plugin's own default is every resource, cluster-scoped ones too)
      rules:
        - operations: [CREATE, UPDATE]
          apiGroups: ['', apps, batch]
          apiVersions: ['*']
          resources: [pods, services, configmaps, deployments, statefulsets, daemonsets, replicasets, jobs, cronjobs]
          scope: Namespaced
    settings:
      labels:
        admissiongateway.io/admitted: 'true'
  - plugin: resource-defaults
    failurePolicy: Ignore
    settings:
      requests: { cpu: 100m, memory: 128Mi }
      limits: { memory: 512Mi }
  - plugin: image-policy
    mode: warn
    settings:
      forbidLatest: true
  - plugin: require-labels
    mode: warn
    settings:
      labels: [team]
  - plugin: pod-security
    mode: warn
`;
