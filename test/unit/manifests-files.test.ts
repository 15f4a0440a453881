/**
 * manifests/ as an operator gets it: every file parses, each kustomization lists exactly its directory's
 * files (kubectl kustomize renders them, when kubectl is installed), and the objects agree with each other
 * (Service → Deployment → ConfigMap → the gateway's own config validation, RBAC ↔ ServiceAccount, PDB,
 * webhooks → Service, ServiceMonitor → Service and certificate Secret, NetworkPolicy → the Deployment's and the
 * Service's ports). The Grafana dashboard queries only metrics a running gateway exports. The apiserver's own
 * verdict on the same files is test/e2e/install-manifests.e2e.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { isIP } from 'node:net';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1Deployment,
  V1MutatingWebhookConfiguration,
  V1Namespace,
  V1PodDisruptionBudget,
  V1PolicyRule,
  V1Role,
  V1RoleBinding,
  V1Service,
  V1ServiceAccount,
  V1ValidatingWebhookConfiguration,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { compileSelector } from '../../server/steps/label-selector.js';
import { parseConfigText } from '../../server/config/load.js';
import type { GatewayConfig } from '../../server/config/types.js';
import type { LabelSelector } from '../../server/plugin-api/types.js';
import { podCreate } from '../fixtures/reviews/index.js';
import { parseDockerfile } from '../helpers/dockerfile.js';
import { startHarness } from '../helpers/gateway-harness.js';
import {
  MANIFESTS_DIR,
  describeDocument,
  isRecord,
  kustomizationDocuments,
  objectId,
  readDocuments,
  readKustomization,
  yamlFiles,
  type ManifestDocument,
  type Wire,
} from '../helpers/manifest-files.js';

const run = promisify(execFile);

/** Kinds the manifests use that are cluster-scoped (everything else must be in the gateway's namespace). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
]);

/** A NetworkPolicy as written (client-node's type spells the rule's `from` as `_from`). */
interface NetworkPolicyWire {
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: {
    readonly podSelector: LabelSelector;
    readonly policyTypes: readonly string[];
    readonly ingress: ReadonlyArray<{
      readonly from?: ReadonlyArray<{ readonly ipBlock?: { readonly cidr: string } } & Wire>;
      readonly ports?: ReadonlyArray<{ readonly port: string | number; readonly protocol?: string }>;
    }>;
  };
}

/** A request as RBAC sees it: `name` is empty for a create (the apiserver authorizes it before the name exists). */
interface RbacRequest {
  readonly verb: string;
  readonly apiGroup: string;
  readonly resource: string;
  readonly namespace: string;
  readonly name: string;
}

/** Whether RBAC's rule matching lets `rule` allow `request` (wildcards, and resourceNames only with a name). */
function ruleAllows(rule: V1PolicyRule, request: RbacRequest): boolean {
  const has = (list: readonly string[] | undefined, value: string) =>
    (list ?? []).includes('*') || (list ?? []).includes(value);
  const names = rule.resourceNames ?? [];
  return (
    has(rule.verbs, request.verb) &&
    has(rule.apiGroups, request.apiGroup) &&
    has(rule.resources, request.resource) &&
    (names.length === 0 || (request.name !== '' && names.includes(request.name)))
  );
}

/**
 * Whether the documents' RBAC lets the ServiceAccount `account` make `request`: the rules of every ClusterRole bound
 * to it by a ClusterRoleBinding, and of every Role or ClusterRole bound by a RoleBinding in the request's namespace.
 */
function rbacAllows(
  docs: readonly ManifestDocument[],
  account: { readonly name: string; readonly namespace: string },
  request: RbacRequest,
): boolean {
  const boundHere = (subjects: RbacV1SubjectList) =>
    (subjects ?? []).some(
      (s) => s.kind === 'ServiceAccount' && s.name === account.name && s.namespace === account.namespace,
    );
  const roles = docs.map((d) => d.object as unknown as V1Role & { kind: string });
  const rulesOf = (kind: string, name: string, namespace: string | undefined) =>
    roles
      .filter(
        (r) =>
          r.kind === kind &&
          r.metadata?.name === name &&
          (kind === 'ClusterRole' || r.metadata?.namespace === namespace),
      )
      .flatMap((r) => r.rules ?? []);
  const rules = [
    ...all<V1ClusterRoleBinding>(docs, 'ClusterRoleBinding')
      .filter((b) => boundHere(b.subjects))
      .flatMap((b) => rulesOf('ClusterRole', b.roleRef.name, undefined)),
    ...all<V1RoleBinding>(docs, 'RoleBinding')
      .filter((b) => b.metadata?.namespace === request.namespace && boundHere(b.subjects))
      .flatMap((b) => rulesOf(b.roleRef.kind, b.roleRef.name, request.namespace)),
  ];
  return rules.some((rule) => ruleAllows(rule, request));
}

type RbacV1SubjectList = V1RoleBinding['subjects'];

/** ClusterRoles every cluster has (the apiserver keeps them): a binding may refer to them without shipping them. */
const BUILT_IN_CLUSTER_ROLES = new Set(['system:auth-delegator']);

/** The webhook server's routes (README "Routes"). */
const ROUTES = ['/mutate', '/validate', '/mutate/fail', '/mutate/ignore', '/validate/fail', '/validate/ignore'];

/** The one document of `kind` (and apiVersion, when given) among `docs`. */
function one<T>(docs: readonly ManifestDocument[], kind: string, apiVersion?: string): T {
  const found = docs.filter((d) => d.object.kind === kind && (!apiVersion || d.object.apiVersion === apiVersion));
  assert.equal(found.length, 1, `expected exactly one ${apiVersion ?? ''} ${kind}, found ${found.length}`);
  return found[0]!.object as T;
}

function all<T>(docs: readonly ManifestDocument[], kind: string): T[] {
  return docs.filter((d) => d.object.kind === kind).map((d) => d.object as T);
}

describe('manifests/ files', function () {
  let files: string[];
  let docs: ManifestDocument[];
  /** What `kubectl apply -k manifests/` sends. */
  let base: ManifestDocument[];
  let namespace: string;
  let deployment: V1Deployment;
  let podLabels: Record<string, string>;
  let service: V1Service;
  let config: GatewayConfig;

  before(async function () {
    files = await yamlFiles();
    docs = (await Promise.all(files.map((f) => readDocuments(f)))).flat();
    base = await kustomizationDocuments('');
    namespace = one<V1Namespace>(base, 'Namespace').metadata!.name!;
    deployment = one<V1Deployment>(base, 'Deployment');
    podLabels = deployment.spec!.template.metadata!.labels!;
    service = one<V1Service>(base, 'Service');
    const configMap = one<V1ConfigMap>(base, 'ConfigMap');
    config = parseConfigText(configMap.data!['gateway.yaml']!, 'manifests/config.yaml gateway.yaml', '/');
  });

  const container = () => deployment.spec!.template.spec!.containers[0]!;
  const containerPort = (name: string) => container().ports!.find((p) => p.name === name)?.containerPort;

  describe('syntax and layout', function () {
    it('parses every manifests/**/*.yaml, each document with apiVersion, kind and metadata.name', function () {
      assert.ok(
        files.includes('deployment.yaml') && files.includes('monitoring/servicemonitor.yaml'),
        files.join(', '),
      );
      const problems = docs.flatMap((d) => {
        const meta = d.object.metadata;
        const missing = [
          typeof d.object.apiVersion === 'string' && d.object.apiVersion ? undefined : 'apiVersion',
          typeof d.object.kind === 'string' && d.object.kind ? undefined : 'kind',
          // kustomization.yaml files are kustomize's, not the apiserver's: no metadata.
          d.file.endsWith('kustomization.yaml') || (isRecord(meta) && typeof meta.name === 'string' && meta.name)
            ? undefined
            : 'metadata.name',
        ].filter((m) => m !== undefined);
        return missing.length > 0 ? [`${describeDocument(d)}: no ${missing.join(', ')}`] : [];
      });
      assert.deepEqual(problems, []);
    });

    it('has a kustomization in every directory, listing exactly the YAML files beside it', async function () {
      const dirs = [...new Set(files.map((f) => path.dirname(f)))].map((d) => (d === '.' ? '' : d));
      const problems: string[] = [];
      for (const dir of dirs) {
        const here = files
          .filter((f) => path.dirname(f) === (dir || '.') && path.basename(f) !== 'kustomization.yaml')
          .map((f) => path.basename(f))
          .sort();
        if (!files.includes(path.join(dir, 'kustomization.yaml'))) {
          problems.push(`manifests/${dir}: no kustomization.yaml for ${here.join(', ')}`);
          continue;
        }
        const k = await readKustomization(dir);
        const listedFiles = [...k.resources, ...k.patches].filter((r) => !r.includes('/') && r !== '..' && r !== '.');
        const duplicates = listedFiles.filter((f, i) => listedFiles.indexOf(f) !== i);
        if (duplicates.length > 0)
          problems.push(`manifests/${dir} kustomization.yaml lists twice: ${duplicates.join(', ')}`);
        const notListed = here.filter((f) => !listedFiles.includes(f));
        const missing = listedFiles.filter((f) => !here.includes(f));
        if (notListed.length > 0) problems.push(`manifests/${dir} does not list ${notListed.join(', ')}`);
        if (missing.length > 0) problems.push(`manifests/${dir} lists missing ${missing.join(', ')}`);
      }
      assert.deepEqual(problems, []);
    });

    it('keeps the optional parts out of `kubectl apply -k manifests/`', async function () {
      const root = await readKustomization('');
      assert.equal(root.kind, 'Kustomization');
      assert.deepEqual(
        root.resources.filter((r) => !r.endsWith('.yaml')),
        [],
        'manifests/ includes no directory (monitoring/ and k8s-1.20/ are opt-in)',
      );
      const kinds = base.map((d) => `${String(d.object.apiVersion)} ${String(d.object.kind)}`);
      assert.ok(!kinds.some((k) => k.startsWith('monitoring.coreos.com/')), 'works without prometheus-operator CRDs');
      assert.ok(kinds.includes('policy/v1 PodDisruptionBudget'), kinds.join(', '));
      assert.equal((await readKustomization('monitoring')).kind, 'Kustomization');
      assert.equal((await readKustomization('k8s-1.20')).kind, 'Component');
      assert.equal((await readKustomization('autoscaling')).kind, 'Component');
      assert.equal((await readKustomization('network-policy')).kind, 'Component');
      assert.ok(
        !kinds.some((k) => k.endsWith(' NetworkPolicy')),
        'no NetworkPolicy without the control plane addresses',
      );
    });

    it('renders with kubectl kustomize to exactly these files (skipped without kubectl)', async function () {
      this.timeout(120_000);
      const kustomize = async (dir: string): Promise<string[]> => {
        const { stdout } = await run('kubectl', ['kustomize', dir], { timeout: 100_000, maxBuffer: 16 << 20 });
        return stdout
          .split(/^---$/m)
          .map((d) => parse(d) as unknown)
          .filter(isRecord)
          .map(objectId)
          .sort();
      };
      try {
        await run('kubectl', ['version', '--client'], { timeout: 30_000 });
      } catch {
        this.skip();
      }
      const ids = (d: readonly ManifestDocument[]) => d.map((x) => objectId(x.object)).sort();
      assert.deepEqual(await kustomize(MANIFESTS_DIR), ids(base));
      assert.deepEqual(
        await kustomize(path.join(MANIFESTS_DIR, 'monitoring')),
        ids(await kustomizationDocuments('monitoring')),
      );
      // The ≤1.20 component, used the way the README says: from an overlay outside manifests/.
      const overlay = await mkdtemp(path.join(tmpdir(), 'manifests-1.20-'));
      try {
        const rel = path.relative(overlay, MANIFESTS_DIR);
        await writeFile(
          path.join(overlay, 'kustomization.yaml'),
          `resources: [${rel}]\ncomponents: [${rel}/k8s-1.20]\n`,
        );
        const legacy = await kustomize(overlay);
        const expected = ids(base)
          .filter((id) => id !== `policy/v1 PodDisruptionBudget ${namespace}/admission-gateway`)
          .concat(`policy/v1beta1 PodDisruptionBudget ${namespace}/admission-gateway`)
          .sort();
        assert.deepEqual(legacy, expected);
        // The autoscaling component: the same objects plus the autoscaler, and a Deployment without replicas.
        await writeFile(
          path.join(overlay, 'kustomization.yaml'),
          `resources: [${rel}]\ncomponents: [${rel}/autoscaling]\n`,
        );
        const { stdout } = await run('kubectl', ['kustomize', overlay], { timeout: 100_000, maxBuffer: 16 << 20 });
        const scaled = stdout
          .split(/^---$/m)
          .map((d) => parse(d) as unknown)
          .filter(isRecord);
        assert.deepEqual(
          scaled.map(objectId).sort(),
          ids(base).concat(`autoscaling/v2 HorizontalPodAutoscaler ${namespace}/admission-gateway`).sort(),
        );
        const rendered = scaled.find((d) => d.kind === 'Deployment') as unknown as V1Deployment;
        assert.equal(rendered.spec!.replicas, undefined);
        assert.deepEqual(rendered.spec!.template, deployment.spec!.template);
      } finally {
        await rm(overlay, { recursive: true, force: true });
      }
    });

    it('puts namespaced objects in the gateway namespace and no namespace on cluster-scoped ones', function () {
      const problems = docs
        .filter((d) => !d.file.endsWith('kustomization.yaml'))
        .flatMap((d) => {
          const ns = isRecord(d.object.metadata) ? d.object.metadata.namespace : undefined;
          if (CLUSTER_SCOPED.has(String(d.object.kind))) {
            return ns === undefined
              ? []
              : [`${describeDocument(d)}: cluster-scoped, yet namespace ${JSON.stringify(ns)}`];
          }
          return ns === namespace
            ? []
            : [`${describeDocument(d)}: namespace ${JSON.stringify(ns)}, expected ${namespace}`];
        });
      assert.deepEqual(problems, []);
    });
  });

  describe('cross-references', function () {
    it('the Service selects the Deployment pods and targets named container ports the config listens on', function () {
      assert.ok(compileSelector({ matchLabels: service.spec!.selector! })(podLabels), 'selector matches pods');
      assert.deepEqual(deployment.spec!.selector.matchLabels, service.spec!.selector);
      for (const port of service.spec!.ports!) {
        assert.equal(typeof port.targetPort, 'string', `Service port ${port.name} targets a port by name`);
        assert.ok(containerPort(String(port.targetPort)), `container has a port named ${String(port.targetPort)}`);
      }
      assert.equal(containerPort('webhook'), config.server.port, 'webhook container port = server.port');
      assert.equal(containerPort('ops'), config.server.opsPort, 'ops container port = server.opsPort');
      assert.equal(containerPort('health'), config.server.healthPort, 'health container port = server.healthPort');
      // The probes' port is the kubelet's: no Service publishes it.
      assert.deepEqual(
        service.spec!.ports!.filter((p) => p.targetPort === 'health' || p.targetPort === config.server.healthPort),
        [],
      );
    });

    it('the ServiceAccount, the Deployment and every RBAC binding name the same account; roleRefs exist', function () {
      const account = one<V1ServiceAccount>(base, 'ServiceAccount').metadata!;
      assert.equal(deployment.spec!.template.spec!.serviceAccountName, account.name);
      const bindings = [
        ...all<V1ClusterRoleBinding>(base, 'ClusterRoleBinding'),
        ...all<V1RoleBinding>(base, 'RoleBinding'),
      ];
      assert.ok(bindings.length > 0, 'at least one binding');
      for (const binding of bindings) {
        const where = `${binding.kind}/${binding.metadata!.name}`;
        assert.deepEqual(
          binding.subjects,
          [{ kind: 'ServiceAccount', name: account.name, namespace: account.namespace }],
          where,
        );
        const roles = base.filter(
          (d) =>
            d.object.kind === binding.roleRef.kind &&
            (d.object.metadata as Wire).name === binding.roleRef.name &&
            (binding.kind === 'ClusterRoleBinding' ||
              (d.object.metadata as Wire).namespace === binding.metadata!.namespace),
        );
        const builtIn = binding.roleRef.kind === 'ClusterRole' && BUILT_IN_CLUSTER_ROLES.has(binding.roleRef.name);
        assert.equal(
          roles.length,
          builtIn ? 0 : 1,
          `${where}: roleRef ${binding.roleRef.kind}/${binding.roleRef.name} ${builtIn ? 'is built in' : 'exists'}`,
        );
        assert.equal(binding.roleRef.apiGroup, 'rbac.authorization.k8s.io', where);
      }
    });

    it('the Deployment starts serve the way the image runs it: node (the entrypoint), then the script its CMD names', async function () {
      const stages = parseDockerfile(await readFile(path.join(MANIFESTS_DIR, '..', 'Dockerfile'), 'utf8'));
      const runtime = stages.at(-1)!;
      assert.match(runtime.image, /distroless\/nodejs/, 'the entrypoint is node, so args replace only CMD');
      const [script, command] = JSON.parse(runtime.instructions.find((i) => i.keyword === 'CMD')!.args) as string[];
      assert.equal(container().command, undefined);
      assert.deepEqual(container().args!.slice(0, 2), [script, command]);
    });

    it('the Deployment mounts the ConfigMap key its --config names, and that gateway.yaml is valid', function () {
      const configMap = one<V1ConfigMap>(base, 'ConfigMap');
      const args = container().args!;
      const file = args[args.indexOf('--config') + 1]!;
      assert.ok(args.includes('--config') && file, `args name a config file: ${args.join(' ')}`);
      const mount = container().volumeMounts!.find((m) => path.dirname(file) === m.mountPath);
      assert.ok(mount, `a volume is mounted at ${path.dirname(file)}`);
      const volume = deployment.spec!.template.spec!.volumes!.find((v) => v.name === mount.name);
      assert.equal(volume?.configMap?.name, configMap.metadata!.name);
      assert.ok(configMap.data?.[path.basename(file)], `ConfigMap has the key ${path.basename(file)}`);
      // parseConfigText (in before) throws ConfigError naming the field; reaching here means it passed.
      assert.equal(config.server.port, 8443);
    });

    it('the Deployment is what a production install needs: replicas, rollout, spread, non-root, probes, preStop, resources', function () {
      const spec = deployment.spec!;
      const pod = spec.template.spec!;
      assert.ok(spec.replicas! >= 2, 'at least 2 replicas');
      assert.deepEqual(spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
      assert.deepEqual(
        pod.topologySpreadConstraints!.map((c) => [c.topologyKey, c.maxSkew, c.labelSelector?.matchLabels]),
        [
          ['kubernetes.io/hostname', 1, podLabels],
          ['topology.kubernetes.io/zone', 1, podLabels],
        ],
      );
      assert.equal(pod.securityContext?.runAsNonRoot, true);
      const c = container();
      assert.deepEqual(c.securityContext, {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
        assert.equal(probe?.httpGet?.port, 'health', 'probes use the health port');
      }
      assert.equal(c.readinessProbe!.httpGet!.path, '/readyz');
      assert.equal(c.livenessProbe!.httpGet!.path, '/healthz');
      assert.ok(c.resources?.requests?.cpu && c.resources.requests.memory && c.resources.limits?.memory);
      // No Secret volume: the gateway keeps its certificate in the Secret through the API (rbac.yaml).
      assert.deepEqual(
        pod.volumes!.filter((v) => v.secret),
        [],
      );
      // preStop sleep + the gateway's drain must fit in the grace period, or SIGKILL cuts in-flight reviews.
      const sleepMs = Number(
        /setTimeout\(\(\) => \{\}, (\d+)\)/.exec(c.lifecycle!.preStop!.exec!.command!.join(' '))?.[1],
      );
      assert.ok(sleepMs > 0, 'preStop sleeps');
      assert.ok(
        pod.terminationGracePeriodSeconds! > sleepMs / 1000 + config.server.shutdownTimeoutSeconds,
        `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} > ${sleepMs / 1000} s preStop + ${config.server.shutdownTimeoutSeconds} s drain`,
      );
    });

    it('the PodDisruptionBudget selects the Deployment pods; its ≤1.20 variant is the same budget', async function () {
      const pdb = one<V1PodDisruptionBudget>(base, 'PodDisruptionBudget', 'policy/v1');
      assert.ok(compileSelector(pdb.spec!.selector as LabelSelector)(podLabels), 'selects the gateway pods');
      assert.equal(pdb.spec!.maxUnavailable, 1);
      assert.equal(pdb.spec!.minAvailable, undefined);

      const component = await readKustomization('k8s-1.20');
      const [deletion] = (
        await Promise.all(component.patches.map((p) => readDocuments(path.join('k8s-1.20', p))))
      ).flat();
      assert.equal(deletion?.object.$patch, 'delete');
      assert.equal(objectId(deletion.object), objectId(pdb as unknown as Wire), 'the component deletes this PDB');
      const legacy = one<Wire>(await kustomizationDocuments('k8s-1.20'), 'PodDisruptionBudget', 'policy/v1beta1');
      assert.deepEqual(legacy.metadata, pdb.metadata);
      const { unhealthyPodEvictionPolicy, ...rest } = pdb.spec!;
      assert.equal(unhealthyPodEvictionPolicy, 'AlwaysAllow');
      assert.deepEqual(legacy.spec, rest, 'the same spec without the 1.26+ field');
    });

    it('the autoscaling component scales the Deployment on CPU from 2 pods, and leaves it the replica count', async function () {
      const component = await readKustomization('autoscaling');
      assert.equal(component.kind, 'Component');
      const hpa = one<V2HorizontalPodAutoscaler>(
        await kustomizationDocuments('autoscaling'),
        'HorizontalPodAutoscaler',
        'autoscaling/v2',
      );
      assert.deepEqual(hpa.metadata, { ...deployment.metadata, labels: deployment.metadata!.labels });
      assert.deepEqual(hpa.spec!.scaleTargetRef, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: 'admission-gateway',
      });
      // With maxUnavailable 1, two pods keep one serving through a drain.
      assert.ok(hpa.spec!.minReplicas! >= 2 && hpa.spec!.maxReplicas >= hpa.spec!.minReplicas!);
      assert.deepEqual(
        hpa.spec!.metrics!.map((m) => [m.type, m.resource?.name, m.resource?.target.type]),
        [['Resource', 'cpu', 'Utilization']],
      );
      assert.ok(
        deployment.spec!.template.spec!.containers[0]!.resources!.requests!.cpu,
        'utilization needs a CPU request',
      );
      const [patch] = (
        await Promise.all(component.patches.map((p) => readDocuments(path.join('autoscaling', p))))
      ).flat();
      assert.equal(objectId(patch!.object), objectId(deployment as unknown as Wire));
      assert.deepEqual(patch!.object.spec, { replicas: null }, 'the patch only drops spec.replicas');
    });

    it('the webhooks call the Service on gateway routes, sideEffects None, both review versions, never kube-system or the gateway namespace', function () {
      const configurations = [
        ...all<V1MutatingWebhookConfiguration>(base, 'MutatingWebhookConfiguration'),
        ...all<V1ValidatingWebhookConfiguration>(base, 'ValidatingWebhookConfiguration'),
      ];
      const webhooks = configurations.flatMap((c) => c.webhooks ?? []);
      assert.deepEqual(
        configurations.flatMap((c) => (c.webhooks ?? []).map((w) => [c.kind, w.name])),
        [
          ['MutatingWebhookConfiguration', 'mutate.admissiongateway.io'],
          ['ValidatingWebhookConfiguration', 'validate-ignore.admissiongateway.io'],
        ],
        'the checks below run on every shipped webhook',
      );
      const gatewayNamespace = one<V1Namespace>(base, 'Namespace').metadata!;
      // The labels the namespaces carry on a cluster (kubernetes.io/metadata.name is set by the apiserver).
      const kubeSystem = { 'kubernetes.io/metadata.name': 'kube-system' };
      const own = { ...gatewayNamespace.labels, 'kubernetes.io/metadata.name': namespace };
      const ordinary = { 'kubernetes.io/metadata.name': 'default' };
      for (const webhook of webhooks) {
        const where = webhook.name;
        assert.equal(webhook.sideEffects, 'None', where);
        assert.deepEqual(webhook.admissionReviewVersions, ['v1', 'v1beta1'], where);
        assert.ok(webhook.timeoutSeconds! >= 1 && webhook.timeoutSeconds! <= 30, where);
        const ref = webhook.clientConfig.service!;
        assert.equal(ref.name, service.metadata!.name, where);
        assert.equal(ref.namespace, service.metadata!.namespace, where);
        const servicePort = service.spec!.ports!.find((p) => p.port === (ref.port ?? 443));
        assert.equal(servicePort?.targetPort, 'webhook', `${where}: port ${ref.port} reaches the webhook server`);
        assert.ok(ROUTES.includes(ref.path!), `${where}: ${ref.path} is a gateway route`);
        const split = /\/(fail|ignore)$/.exec(ref.path!)?.[1];
        if (split) assert.equal(webhook.failurePolicy, split === 'fail' ? 'Fail' : 'Ignore', where);
        // Rendered for the newest Kubernetes: the names by matchConditions (the e2e suite shows the apiserver
        // evaluating them), the operator's opt-out label by the selector.
        const selects = compileSelector(webhook.namespaceSelector as LabelSelector);
        assert.equal(selects({ ...ordinary, 'admissiongateway.io/exclude': 'true' }), false, `${where} opt-out`);
        assert.equal(selects(ordinary), true, `${where} still selects ordinary namespaces`);
        const conditions = (webhook.matchConditions ?? []).map((c) => c.expression).join(' && ');
        for (const excluded of [kubeSystem, own]) {
          const name = excluded['kubernetes.io/metadata.name'];
          assert.ok(conditions.includes(`'${name}'`), `${where} excludes ${name} by its matchConditions`);
        }
      }
    });

    it('the ServiceMonitor scrapes /metrics on the ops port over HTTPS, trusting the certificate Secret’s CA, with Prometheus’ token', async function () {
      const monitor = one<Wire>(await kustomizationDocuments('monitoring'), 'ServiceMonitor');
      const spec = monitor.spec as {
        selector: LabelSelector;
        namespaceSelector: { matchNames: string[] };
        endpoints: {
          port: string;
          path: string;
          scheme: string;
          bearerTokenFile?: string;
          tlsConfig?: { ca?: { secret?: { name: string; key: string } }; serverName?: string };
        }[];
      };
      assert.ok(compileSelector(spec.selector)(service.metadata!.labels!), 'selects the Service');
      assert.deepEqual(spec.namespaceSelector.matchNames, [namespace]);
      assert.equal(spec.endpoints.length, 1);
      const endpoint = spec.endpoints[0]!;
      const port = service.spec!.ports!.find((p) => p.name === endpoint.port);
      assert.equal(port?.targetPort, 'ops', 'the Service port leads to the ops server');
      assert.equal(endpoint.path, '/metrics');
      // In cluster mode the ops port is HTTPS and every request carries a token the apiserver checks.
      assert.equal(config.server.opsAuth ?? 'kube', 'kube');
      assert.equal(endpoint.scheme, 'https');
      assert.equal(endpoint.bearerTokenFile, '/var/run/secrets/kubernetes.io/serviceaccount/token');
      // The CA bundle the gateway keeps in its certificate Secret, in the gateway's (and the monitor's) namespace.
      assert.deepEqual(endpoint.tlsConfig?.ca?.secret, { name: config.kube.certificate.secretName, key: 'ca.crt' });
      assert.equal(config.kube.certificate.secretNamespace, (monitor.metadata as Wire).namespace);
      // Prometheus dials pod addresses: it checks the certificate for a name the certificate has.
      assert.equal(endpoint.tlsConfig?.serverName, `${service.metadata!.name}.${namespace}.svc`);
      assert.ok(config.server.tls.dnsNames.includes(`${service.metadata!.name}.${namespace}.svc`));
    });

    it('the gateway may ask the apiserver about its ops callers, and reading metrics is granted apart from traces', function () {
      const delegation = all<V1ClusterRoleBinding>(base, 'ClusterRoleBinding').filter(
        (b) => b.roleRef.name === 'system:auth-delegator',
      );
      assert.equal(delegation.length, 1, 'system:auth-delegator (create tokenreviews, subjectaccessreviews) is bound');
      const readers = Object.fromEntries(
        all<V1ClusterRole>(base, 'ClusterRole')
          .filter((r) => r.rules!.some((rule) => rule.nonResourceURLs))
          .map((r) => [r.metadata!.name!, r.rules]),
      );
      assert.deepEqual(readers, {
        'admission-gateway-metrics-reader': [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
        'admission-gateway-trace-reader': [{ nonResourceURLs: ['/explain', '/explain/*', '/chain'], verbs: ['get'] }],
      });
      // The gateway's own ClusterRole stays without non-resource URLs: reading its ops port is for others.
      assert.ok(
        !all<V1ClusterRole>(base, 'ClusterRole').some(
          (r) => r.metadata!.name === 'admission-gateway' && r.rules!.some((rule) => rule.nonResourceURLs),
        ),
      );
    });

    it('the gateway may read, create and renew the Lease of its leader election, and nothing more on Leases', function () {
      const account = one<V1ServiceAccount>(base, 'ServiceAccount').metadata as { name: string; namespace: string };
      const { leaseName, leaseNamespace } = config.kube.leaderElection;
      const lease = { apiGroup: 'coordination.k8s.io', resource: 'leases', namespace: leaseNamespace };
      const allowed = (verb: string, name: string) => rbacAllows(base, account, { ...lease, verb, name });
      assert.deepEqual(
        {
          get: allowed('get', leaseName),
          create: allowed('create', ''),
          update: allowed('update', leaseName),
          patch: allowed('patch', leaseName),
          delete: allowed('delete', leaseName),
          list: allowed('list', ''),
          watch: allowed('watch', ''),
          'update another Lease': allowed('update', 'kube-scheduler'),
        },
        {
          get: true,
          create: true,
          update: true,
          patch: false,
          delete: false,
          list: false,
          watch: false,
          'update another Lease': false,
        },
      );
    });

    it('the gateway may read and watch the cluster’s admission policies and bindings (fromCluster), and not write them', function () {
      const account = one<V1ServiceAccount>(base, 'ServiceAccount').metadata as { name: string; namespace: string };
      const resources = [
        'validatingadmissionpolicies',
        'validatingadmissionpolicybindings',
        'mutatingadmissionpolicies',
        'mutatingadmissionpolicybindings',
      ];
      const verbs = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
      const allowed = Object.fromEntries(
        resources.map((resource) => [
          resource,
          verbs.filter((verb) =>
            rbacAllows(base, account, {
              apiGroup: 'admissionregistration.k8s.io',
              resource,
              verb,
              namespace: '',
              name: '',
            }),
          ),
        ]),
      );
      assert.deepEqual(allowed, Object.fromEntries(resources.map((resource) => [resource, ['get', 'list', 'watch']])));
    });

    describe('the network-policy component', function () {
      let policy: NetworkPolicyWire;

      before(async function () {
        policy = one<NetworkPolicyWire>(await kustomizationDocuments('network-policy'), 'NetworkPolicy');
      });

      /** The rules of the policy as [the ports they open, who they open them to]. */
      const rules = () =>
        policy.spec.ingress.map((rule) => [(rule.ports ?? []).map((p) => p.port), rule.from ?? []] as const);

      it('selects the gateway pods and opens the webhook and ops ports by the names the Deployment and the Service use, the health port to nobody', function () {
        assert.deepEqual(policy.metadata.namespace, namespace);
        assert.ok(compileSelector(policy.spec.podSelector)(podLabels), 'selects the gateway pods');
        assert.deepEqual(policy.spec.policyTypes, ['Ingress']);
        assert.deepEqual(
          rules().map(([ports]) => ports),
          [['webhook'], ['ops']],
        );
        for (const rule of policy.spec.ingress) {
          for (const port of rule.ports ?? []) {
            assert.equal(port.protocol, 'TCP');
            assert.ok(containerPort(String(port.port)), `the container has a port named ${String(port.port)}`);
            assert.ok(
              service.spec!.ports!.some((p) => p.targetPort === port.port),
              `the Service publishes ${String(port.port)}`,
            );
          }
        }
        // The kubelet probes from the pod's own node, which no NetworkPolicy blocks: no rule names the health port.
        assert.ok(containerPort('health'));
        assert.ok(!rules().some(([ports]) => ports.includes('health') || ports.includes(config.server.healthPort)));
        assert.ok(!rules().some(([ports]) => ports.length === 0), 'every rule names its ports');
        // Prometheus' namespace, by the name label the apiserver sets.
        assert.deepEqual(rules()[1]![1], [
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
        ]);
      });

      it('leaves the apiserver’s addresses to the overlay: replaced from its ControlPlaneAddresses, else a placeholder the apiserver refuses', async function () {
        const component = await readDocuments('network-policy/kustomization.yaml');
        assert.deepEqual(component[0]!.object.replacements, [
          {
            source: { kind: 'ControlPlaneAddresses', name: 'admission-gateway', fieldPath: 'from' },
            targets: [
              { select: { kind: 'NetworkPolicy', name: 'admission-gateway' }, fieldPaths: ['spec.ingress.0.from'] },
            ],
          },
        ]);
        const [ports, from] = rules()[0]!;
        assert.deepEqual(ports, ['webhook']);
        // One policy object: applied without the replacement, the apiserver refuses all of it, never half of it.
        assert.equal(from.length, 1);
        const cidr = from[0]!.ipBlock?.cidr ?? '';
        assert.equal(isIP(cidr.split('/')[0]!), 0, `${cidr} is not an address: the apiserver refuses the policy`);
      });

      it('renders with kubectl kustomize only when an overlay gives the addresses, and then with exactly those (skipped without kubectl)', async function () {
        this.timeout(120_000);
        try {
          await run('kubectl', ['version', '--client'], { timeout: 30_000 });
        } catch {
          this.skip();
        }
        const overlay = await mkdtemp(path.join(tmpdir(), 'manifests-network-policy-'));
        try {
          const rel = path.relative(overlay, MANIFESTS_DIR);
          const render = () => run('kubectl', ['kustomize', overlay], { timeout: 100_000, maxBuffer: 16 << 20 });
          await writeFile(
            path.join(overlay, 'kustomization.yaml'),
            `resources: [${rel}]\ncomponents: [${rel}/network-policy]\n`,
          );
          await assert.rejects(render(), /nothing selected by ControlPlaneAddresses/);

          const addresses = [{ ipBlock: { cidr: '10.0.0.10/32' } }, { ipBlock: { cidr: 'fd00:10::/64' } }];
          await writeFile(
            path.join(overlay, 'control-plane.yaml'),
            stringify({
              apiVersion: 'admissiongateway.io/v1alpha1',
              kind: 'ControlPlaneAddresses',
              metadata: { name: 'admission-gateway', annotations: { 'config.kubernetes.io/local-config': 'true' } },
              from: addresses,
            }),
          );
          await writeFile(
            path.join(overlay, 'kustomization.yaml'),
            `resources: [${rel}, control-plane.yaml]\ncomponents: [${rel}/network-policy]\n`,
          );
          const rendered = (await render()).stdout
            .split(/^---$/m)
            .map((d) => parse(d) as unknown)
            .filter(isRecord);
          assert.deepEqual(
            rendered.map(objectId).sort(),
            [
              ...base.map((d) => objectId(d.object)),
              `networking.k8s.io/v1 NetworkPolicy ${namespace}/admission-gateway`,
            ].sort(),
            'the base and the policy; the addresses object stays local',
          );
          const applied = rendered.find((d) => d.kind === 'NetworkPolicy') as unknown as NetworkPolicyWire;
          assert.deepEqual(applied.spec.ingress[0]!.from, addresses);
          assert.deepEqual(applied.spec.ingress[1], policy.spec.ingress[1]);
        } finally {
          await rm(overlay, { recursive: true, force: true });
        }
      });
    });
  });

  describe('grafana-dashboard.json', function () {
    interface Target {
      readonly expr: string;
      readonly datasource?: { uid?: string };
    }
    interface Panel {
      readonly id: number;
      readonly type: string;
      readonly title: string;
      readonly datasource?: { uid?: string };
      readonly targets?: readonly Target[];
      readonly gridPos?: object;
    }
    interface Dashboard {
      readonly uid: string;
      readonly title: string;
      readonly panels: readonly Panel[];
      readonly templating: {
        list: readonly { name: string; type: string; query: unknown; definition?: string }[];
      };
    }
    let dashboard: Dashboard;

    before(async function () {
      dashboard = JSON.parse(await readFile(path.join(MANIFESTS_DIR, 'grafana-dashboard.json'), 'utf8')) as Dashboard;
    });

    /** Every metric name the dashboard queries (panel targets and template variable queries). */
    const queriedMetrics = (): string[] => {
      const exprs = [
        ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
        ...dashboard.templating.list.map((v) => v.definition ?? ''),
      ];
      return [...new Set(exprs.flatMap((e) => e.match(/\badmission_gateway_[a-z0-9_]+/g) ?? []))].sort();
    };

    it('parses, takes its Prometheus data source from a template variable and hard-codes none', function () {
      assert.equal(dashboard.uid, 'admission-gateway');
      const datasource = dashboard.templating.list.find((v) => v.type === 'datasource');
      assert.deepEqual(datasource && [datasource.name, datasource.query], ['datasource', 'prometheus']);
      const queryPanels = dashboard.panels.filter((p) => p.type !== 'row');
      assert.ok(queryPanels.length >= 10, `${queryPanels.length} panels`);
      for (const panel of queryPanels) {
        assert.equal(panel.datasource?.uid, '${datasource}', panel.title);
        assert.ok(panel.gridPos, panel.title);
        assert.ok((panel.targets ?? []).length > 0, `${panel.title} queries something`);
        for (const t of panel.targets!) assert.equal(t.datasource?.uid, '${datasource}', panel.title);
      }
      const ids = dashboard.panels.map((p) => p.id);
      assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    });

    it('shows rate, p50/p99 by phase, per-step latency and outcomes, breakers, fail-opens, conflicts, inflight, certificate, watches, limits', function () {
      const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
      for (const wanted of [
        /sum by \(phase, allowed\) \(rate\(admission_gateway_requests_total/,
        /histogram_quantile\(0\.5, sum by \(le, phase\) \(rate\(admission_gateway_request_duration_seconds_bucket/,
        /histogram_quantile\(0\.99, sum by \(le, phase\) \(rate\(admission_gateway_request_duration_seconds_bucket/,
        /histogram_quantile\(0\.99, sum by \(le, step, phase\) \(rate\(admission_gateway_step_duration_seconds_bucket/,
        /sum by \(step, outcome\) \(rate\(admission_gateway_step_calls_total/,
        /admission_gateway_breaker_state/,
        /admission_gateway_fail_open_total/,
        /admission_gateway_patch_conflicts_total/,
        /admission_gateway_inflight_requests/,
        /admission_gateway_serving_certificate_expiry_timestamp_seconds\{[^}]*\}\) - time\(\)/,
        /admission_gateway_kube_watch_connected/,
        /admission_gateway_inflight_bytes\{/,
        /admission_gateway_inflight_bytes_limit/,
        /admission_gateway_shed_reviews_total/,
        /admission_gateway_connections_closed_total/,
      ]) {
        assert.match(exprs, wanted);
      }
    });

    it('queries only metrics a running gateway exports on /metrics', async function () {
      this.timeout(60_000);
      const harness = await startHarness({
        yaml: 'chain:\n  - plugin: default-labels\n    settings: { labels: { team: platform } }\n',
      });
      let exposition: string;
      try {
        const answer = await harness.review('/mutate', podCreate());
        assert.equal(answer.response.allowed, true);
        const metrics = await harness.ops('/metrics');
        assert.equal(metrics.status, 200);
        exposition = metrics.text;
      } finally {
        await harness.close();
      }
      // Names from the TYPE lines (present even before a labelled series has a sample), with the series a
      // histogram or summary exposes.
      const exported = new Set<string>();
      for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
        exported.add(name!);
        if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(name! + s);
        if (type === 'summary') for (const s of ['_sum', '_count']) exported.add(name! + s);
      }
      assert.ok(exported.has('admission_gateway_requests_total'), 'the exposition was read');
      const queried = queriedMetrics();
      assert.ok(queried.length >= 10, queried.join(', '));
      assert.deepEqual(
        queried.filter((m) => !exported.has(m)),
        [],
        'queried by the dashboard but not exported',
      );
    });
  });
});

describe('manifests/ directory listing', function () {
  it('holds only YAML manifests and the dashboard', async function () {
    const entries = await readdir(MANIFESTS_DIR, { recursive: true, withFileTypes: true });
    const others = entries
      .filter((e) => e.isFile() && !e.name.endsWith('.yaml'))
      .map((e) => path.relative(MANIFESTS_DIR, path.join(e.parentPath, e.name)));
    assert.deepEqual(others, ['grafana-dashboard.json']);
  });
});
