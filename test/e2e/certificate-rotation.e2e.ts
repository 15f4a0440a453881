/**
 * Certificates over time in cluster mode, against the real kube-apiserver: two gateways (replicas) keep
 * their serving certificate in one Secret, patch the CA bundle into their webhook configuration, put it
 * back when it is blanked, and rotate the CA (stage → promote → prune) while ConfigMap creates keep flowing
 * through the apiserver — failurePolicy Fail, so any TLS failure would fail a create.
 *
 * The apiserver reaches the replicas through a TCP round-robin in the test process (as a Service would):
 * TLS runs end to end between the apiserver and each gateway.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import {
  ApiException,
  AuthorizationV1Api,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1MutatingWebhookConfiguration,
  type V1Role,
  type V1RoleBinding,
  type V1Secret,
} from '@kubernetes/client-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { plugins as shippedPlugins } from '../../plugins/index.js';
import { parseConfigText } from '../../server/config/load.js';
import { startGateway, type Gateway } from '../../server/gateway.js';
import { createClusterMode, type ClusterMode } from '../../server/kube/cluster-mode.js';
import { createLogger } from '../../server/base/log.js';
import { parseManagedSecret, splitPem, type CertificateState } from '../../server/tls/managed-secret.js';
import { phaseOf } from '../../server/tls/rotation.js';
import {
  KUBECONFIG_ENV,
  SUITE_LABEL,
  admissionRegistration,
  core,
  createNamespace,
  eventually,
  kubeConfig,
  newKubeConfig,
  randomSuffix,
} from './cluster.js';
import { anyFailed, registryValue } from './gateway.js';
import { manifestDocuments, toModel } from './manifests.js';
import { serverSideApply, servedResource } from './server-side-apply.js';

const SUITE = 'certrot';
const CONFIG_NAME = `${SUITE}.e2e.admissiongateway.io`;
const SECRET = 'gateway-tls';
const MUTATION_LABEL = 'rotation-e2e';

interface Replica {
  readonly name: string;
  readonly gateway: Gateway;
  readonly cluster: ClusterMode;
  readonly registry: Registry;
  readonly port: number;
  readonly flush: () => void;
}

/** A TCP round-robin over the replicas' webhook ports: the apiserver sees one URL, like a Service. */
async function startRoundRobin(ports: () => readonly number[]) {
  const sockets = new Set<net.Socket>();
  let next = 0;
  const server = net.createServer((client) => {
    const targets = ports();
    const port = targets[next++ % targets.length]!;
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** The certificate a real TLS handshake with `port` presents. */
function servedCertificate(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(raw));
    });
    socket.once('error', reject);
  });
}

async function readSecret(
  namespace: string,
): Promise<{ secret: V1Secret; state: CertificateState; bundlePem: string }> {
  const secret = await core().readNamespacedSecret({ namespace, name: SECRET });
  const data = Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
  const parsed = parseManagedSecret({ data, annotations: secret.metadata?.annotations ?? {} });
  if (!parsed.ok) throw new Error(`the Secret is unusable: ${parsed.problem}`);
  return { secret, state: parsed.state, bundlePem: data['ca.crt'] ?? '' };
}

async function webhookCaBundle(): Promise<string | undefined> {
  const config = await admissionRegistration().readMutatingWebhookConfiguration({ name: CONFIG_NAME });
  return config.webhooks?.[0]?.clientConfig.caBundle;
}

const fingerprints = (pems: readonly string[]) => pems.map((p) => new X509Certificate(p).fingerprint256);

describe('certificates over time in cluster mode (two replicas, one Secret)', function () {
  this.timeout(180_000);
  let dir: string;
  let namespace: string;
  let replicas: Replica[] = [];
  let proxy: Awaited<ReturnType<typeof startRoundRobin>> | undefined;
  let originalCa: string;

  async function startReplica(name: string): Promise<Replica> {
    const configFile = path.join(dir, `${name}.yaml`);
    const text = stringify({
      server: {
        host: '127.0.0.1',
        port: 0,
        opsHost: '127.0.0.1',
        opsPort: 0,
        healthHost: '127.0.0.1',
        healthPort: 0,
        tls: { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] },
        shutdownTimeoutSeconds: 5,
      },
      kube: {
        enabled: true,
        watchProviders: false,
        kubeconfig: process.env[KUBECONFIG_ENV] ?? '',
        certificate: {
          secretName: SECRET,
          secretNamespace: namespace,
          mutatingWebhookConfigurations: [CONFIG_NAME],
          validatingWebhookConfigurations: [],
          // A CA rotation starts 12 s after a CA is made and completes ~5 s later (see the last test).
          caValiditySeconds: 40,
          certValiditySeconds: 40,
          caRenewBeforeSeconds: 28,
          certRenewBeforeSeconds: 10,
          propagationSeconds: 2,
          overlapSeconds: 3,
          resyncSeconds: 0.5,
        },
      },
      log: { level: 'debug' },
      chain: [{ plugin: 'default-labels', settings: { labels: { [MUTATION_LABEL]: 'mutated' } } }],
    });
    await writeFile(configFile, text);
    const config = parseConfigText(text, configFile, dir);
    const destination = pino.destination({ dest: path.join(dir, `${name}.log`), sync: true });
    const log = createLogger(config.log.level, destination);
    const cluster = createClusterMode(newKubeConfig(), config, log, { backoff: { initialMs: 200, maxMs: 1000 } });
    const clusterOptions = await cluster.prepare();
    const registry = new Registry();
    const gateway = await startGateway({
      config,
      plugins: shippedPlugins,
      log,
      registry,
      ...clusterOptions,
    });
    cluster.attach(gateway);
    return {
      name,
      gateway,
      cluster,
      registry,
      port: Number(new URL(gateway.webhookUrl).port),
      flush: () => destination.flushSync(),
    };
  }

  async function createConfigMap(ns: string) {
    return core().createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: `cm-${randomSuffix()}` }, data: { k: 'v' } },
    });
  }

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), `admission-gateway-e2e-${SUITE}-`));
    namespace = await createNamespace(SUITE);
    proxy = await startRoundRobin(() => replicas.map((r) => r.port));
    // Registered first, with no caBundle at all: the gateways must patch it in.
    const body: V1MutatingWebhookConfiguration = {
      metadata: { name: CONFIG_NAME, labels: { [SUITE_LABEL]: SUITE } },
      webhooks: [
        {
          name: `mutate.${CONFIG_NAME}`,
          clientConfig: { url: `https://127.0.0.1:${proxy.port}/mutate` },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          failurePolicy: 'Fail',
          matchPolicy: 'Equivalent',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
          reinvocationPolicy: 'Never',
          namespaceSelector: { matchLabels: { [SUITE_LABEL]: SUITE } },
        },
      ],
    };
    await admissionRegistration().createMutatingWebhookConfiguration({ body });
  });

  after(async function () {
    await admissionRegistration()
      .deleteMutatingWebhookConfiguration({ name: CONFIG_NAME })
      .catch(() => undefined);
    for (const r of replicas) {
      await r.cluster.stop();
      await r.gateway.close();
      r.flush();
    }
    await proxy?.close();
    if (anyFailed(this.test!.parent!) || process.env.E2E_KEEP) console.log(`gateway logs kept in ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  });

  it('two replicas starting together with no Secret create exactly one and serve the same certificate', async () => {
    replicas = await Promise.all([startReplica('a'), startReplica('b')]);
    const { state, secret } = await readSecret(namespace);
    originalCa = state.signing.fingerprint256;
    assert.equal(secret.type, 'kubernetes.io/tls');
    const secrets = await core().listNamespacedSecret({ namespace, labelSelector: 'app.kubernetes.io/managed-by' });
    assert.deepEqual(
      secrets.items.map((s) => s.metadata?.name),
      [SECRET],
    );
    // One replica created it; the other lost the race (409 AlreadyExists) and read it.
    const created = await Promise.all(
      replicas.map((r) =>
        registryValue(r.registry, 'admission_gateway_certificate_rotation_steps_total', { step: 'create' }),
      ),
    );
    assert.deepEqual(created.map((v) => v ?? 0).sort(), [0, 1]);
    assert.equal(replicas[0]!.gateway.tls().fingerprint256, state.serving.fingerprint256);
    assert.equal(replicas[1]!.gateway.tls().fingerprint256, state.serving.fingerprint256);
    for (const r of replicas) {
      assert.equal((await servedCertificate(r.port)).fingerprint256, state.serving.fingerprint256, r.name);
      assert.equal(
        await registryValue(r.registry, 'admission_gateway_serving_certificate_expiry_timestamp_seconds', {}),
        state.serving.notAfter.getTime() / 1000,
      );
    }
  });

  it('patches the CA bundle into the webhook registered with an empty caBundle, and the apiserver calls through it', async () => {
    await eventually('the caBundle to be the Secret bundle', async () => {
      const { bundlePem } = await readSecret(namespace);
      const current = await webhookCaBundle();
      if (current !== Buffer.from(bundlePem).toString('base64')) throw new Error(`caBundle is ${String(current)}`);
      return true;
    });
    const stored = await eventually('a ConfigMap create through the gateways', () => createConfigMap(namespace));
    assert.equal(stored.metadata?.labels?.[MUTATION_LABEL], 'mutated');
  });

  it('puts the caBundle back after someone blanks it', async () => {
    const api = admissionRegistration();
    await eventually('blanking the caBundle', async () => {
      const config = await api.readMutatingWebhookConfiguration({ name: CONFIG_NAME });
      config.webhooks![0]!.clientConfig.caBundle = '';
      await api.replaceMutatingWebhookConfiguration({ name: CONFIG_NAME, body: config });
      return true;
    });
    const restored = await eventually('the caBundle to be restored', async () => {
      const { bundlePem } = await readSecret(namespace);
      const current = await webhookCaBundle();
      if (current !== Buffer.from(bundlePem).toString('base64'))
        throw new Error(`caBundle is ${JSON.stringify(current)}`);
      return current;
    });
    assert.ok(splitPem(Buffer.from(restored, 'base64').toString('utf8')).length >= 1);
    const stored = await eventually('a ConfigMap create after the repair', () => createConfigMap(namespace));
    assert.equal(stored.metadata?.labels?.[MUTATION_LABEL], 'mutated');
  });

  it('keeps the patched caBundle when the configuration is applied again without one (as manifests/webhooks.yaml ships)', async () => {
    const api = admissionRegistration();
    const { bundlePem } = await readSecret(namespace);
    const bundle = Buffer.from(bundlePem).toString('base64');
    await eventually('the caBundle to be the Secret bundle', async () => {
      if ((await webhookCaBundle()) !== bundle) throw new Error('not patched yet');
      return true;
    });
    const live = await api.readMutatingWebhookConfiguration({ name: CONFIG_NAME });
    // What an operator applies: the rendered configuration, which has no caBundle field at all.
    const applied = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: CONFIG_NAME },
      webhooks: (live.webhooks ?? []).map(({ clientConfig, ...webhook }) => ({
        ...webhook,
        clientConfig: { ...(clientConfig.url ? { url: clientConfig.url } : { service: clientConfig.service }) },
      })),
    };
    const resource = await servedResource('admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration');
    assert.ok(resource, 'the apiserver serves MutatingWebhookConfiguration');
    const answer = await serverSideApply(applied, resource, { dryRun: false, fieldManager: 'operator-apply' });
    // The answer is the stored object right after the apply: the field nobody applied is still there.
    const webhooks = (answer as unknown as V1MutatingWebhookConfiguration).webhooks ?? [];
    assert.deepEqual(
      webhooks.map((w) => w.clientConfig.caBundle),
      webhooks.map(() => bundle),
    );
  });

  it('rotates the CA (stage → promote → prune) under steady load through the apiserver with no failed request', async () => {
    const load = await createNamespace(SUITE);
    const failures: string[] = [];
    const created: { name: string; phase: string; mutated: boolean }[] = [];
    let phase = 'unknown';
    let stop = false;

    // Watch the Secret: a full rotation is a CA staged after the load started, promoted, then pruned.
    const seen: { phase: string; signing: string; next?: string; bundle: string[] }[] = [];
    const knownCas = new Map<string, X509Certificate>();
    // The sampler names the CA behind each served certificate from knownCas, so it starts after the first read.
    let firstRead: () => void = () => undefined;
    const secretRead = new Promise<void>((resolve) => (firstRead = resolve));
    const poller = (async () => {
      while (!stop) {
        const { state } = await readSecret(namespace).catch(() => ({ state: undefined }));
        if (state) {
          for (const pem of [...state.bundle.map((c) => c.pem), ...(state.next ? [state.next.pem] : [])]) {
            const ca = new X509Certificate(pem);
            knownCas.set(ca.fingerprint256, ca);
          }
          firstRead();
          phase = phaseOf(state);
          const entry = {
            phase,
            signing: state.signing.fingerprint256,
            ...(state.next ? { next: state.next.fingerprint256 } : {}),
            bundle: state.bundle.map((c) => c.fingerprint256),
          };
          const last = seen.at(-1);
          if (!last || last.phase !== entry.phase || last.signing !== entry.signing) seen.push(entry);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      firstRead(); // never leave the sampler waiting once the test stops
    })();
    const rotated = (): { from: string; to: string } | undefined => {
      for (let i = 0; i < seen.length; i++) {
        const staged = seen[i]!;
        if (staged.phase !== 'staged' || !staged.next) continue;
        const promoted = seen.findIndex((s, j) => j > i && s.phase === 'promoted' && s.signing === staged.next);
        if (promoted < 0) continue;
        const pruned = seen.findIndex((s, j) => j > promoted && s.phase === 'steady' && s.signing === staged.next);
        if (pruned >= 0) return { from: staged.signing, to: staged.next };
      }
      return undefined;
    };

    // What the apiserver is told to trust and what the replicas present, sampled side by side: the CA that
    // issued each replica's certificate must be in the webhook's caBundle in every sample.
    const samples: { trusted: string[]; servedBy: (string | undefined)[] }[] = [];
    const issuer = (cert: X509Certificate) =>
      [...knownCas.values()].find((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey))?.fingerprint256;
    const sampler = (async () => {
      await secretRead;
      while (!stop) {
        try {
          const bundle = Buffer.from((await webhookCaBundle()) ?? '', 'base64').toString('utf8');
          const served = await Promise.all(replicas.map((r) => servedCertificate(r.port)));
          samples.push({ trusted: fingerprints(splitPem(bundle)), servedBy: served.map(issuer) });
        } catch {
          // A failed sample is skipped; the load decides whether a request failed.
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    // ConfigMap creates every ~20 ms, each awaited: failurePolicy Fail turns any TLS failure into an error.
    const loader = (async () => {
      while (!stop) {
        const at = phase;
        try {
          const cm = await createConfigMap(load);
          created.push({
            name: cm.metadata!.name!,
            phase: at,
            mutated: cm.metadata?.labels?.[MUTATION_LABEL] === 'mutated',
          });
        } catch (err) {
          failures.push(err instanceof ApiException ? `${err.code}: ${String(err.body)}` : String(err));
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    let rotation: { from: string; to: string };
    try {
      // Start counting from the state when the load began; a rotation already under way does not count.
      seen.length = 0;
      // Complete = the Secret went through every phase, and the sampled webhook shows the old CA pruned.
      const complete = () => {
        const r = rotated();
        const trusted = r ? samples.findIndex((x) => x.trusted.includes(r.to)) : -1;
        const pruned = r && samples.some((x, i) => i > trusted && trusted >= 0 && !x.trusted.includes(r.from));
        return Promise.resolve(pruned ? r : undefined);
      };
      rotation = await eventually('a complete CA rotation under load', complete, {
        timeoutMs: 120_000,
        intervalMs: 200,
      });
    } finally {
      stop = true;
      await Promise.all([loader, poller, sampler]);
    }
    const newCa = rotation.to;
    // The overlap as the Secret stored it: once the new CA signs, the bundle still trusts the old one.
    const promotedStates = seen.filter((s) => s.phase === 'promoted' && s.signing === newCa);
    assert.ok(promotedStates.length > 0, JSON.stringify(seen));
    for (const s of promotedStates)
      assert.deepEqual([...s.bundle].sort(), [rotation.from, newCa].sort(), 'promoted bundle');

    // Order of events as sampled: the apiserver trusted the new CA before any replica served a certificate
    // it issued, and kept trusting the old CA until both replicas served the new one (the overlap).
    const unknown = samples.filter((x) => x.servedBy.includes(undefined));
    assert.deepEqual(unknown, [], 'every served certificate was issued by a CA of the Secret');
    const untrusted = samples.filter((x) => x.servedBy.some((ca) => !x.trusted.includes(ca!)));
    assert.deepEqual(untrusted, [], 'every served certificate was trusted by the webhook at that moment');
    const firstTrust = samples.findIndex((x) => x.trusted.includes(newCa));
    const firstServe = samples.findIndex((x) => x.servedBy.includes(newCa));
    const allServe = samples.findIndex((x) => x.servedBy.every((ca) => ca === newCa));
    const pruned = samples.findIndex((x, i) => i > firstTrust && !x.trusted.includes(rotation.from));
    assert.ok(
      firstTrust >= 0 && firstServe >= 0 && allServe >= 0 && pruned >= 0,
      JSON.stringify({ firstTrust, firstServe, allServe, pruned }),
    );
    assert.ok(firstTrust < firstServe, `new CA trusted (sample ${firstTrust}) before served (sample ${firstServe})`);
    assert.ok(
      allServe < pruned,
      `old CA trusted (until sample ${pruned}) after all serve the new (sample ${allServe})`,
    );

    assert.deepEqual(failures, [], 'no create failed');
    assert.ok(created.length > 0);
    assert.deepEqual(
      created.filter((c) => !c.mutated).map((c) => c.name),
      [],
      'every stored object was mutated',
    );
    // Creates went through while both CAs were trusted.
    for (const p of ['staged', 'promoted']) {
      assert.ok(
        created.some((c) => c.phase === p),
        `no create completed in phase ${p}: ${JSON.stringify(seen)}`,
      );
    }
    // What the apiserver stored, read back.
    const stored = await core().listNamespacedConfigMap({ namespace: load });
    const ours = stored.items.filter((cm) => cm.metadata?.name?.startsWith('cm-'));
    assert.equal(ours.length, created.length);
    assert.ok(ours.every((cm) => cm.metadata?.labels?.[MUTATION_LABEL] === 'mutated'));
    assert.notEqual(newCa, originalCa);

    // In a steady moment (rotations keep coming every ~12 s with these settings): the webhook trusts exactly
    // the Secret's signing CA, and both replicas serve the Secret's certificate, issued by that CA.
    await eventually(
      'a steady state after the rotation',
      async () => {
        const { state } = await readSecret(namespace);
        if (phaseOf(state) !== 'steady') throw new Error(`phase ${phaseOf(state)}`);
        if (state.signing.fingerprint256 === originalCa) throw new Error('still the original CA');
        const bundle = Buffer.from((await webhookCaBundle()) ?? '', 'base64').toString('utf8');
        assert.deepEqual(fingerprints(splitPem(bundle)), [state.signing.fingerprint256], 'webhook caBundle');
        const ca = new X509Certificate(state.signing.pem);
        for (const r of replicas) {
          const served = await servedCertificate(r.port);
          assert.equal(
            served.fingerprint256,
            state.serving.fingerprint256,
            `${r.name} serves the Secret's certificate`,
          );
          assert.ok(
            served.checkIssued(ca) && served.verify(ca.publicKey),
            `${r.name}'s certificate issued by the new CA`,
          );
          assert.equal(
            await registryValue(r.registry, 'admission_gateway_serving_certificate_expiry_timestamp_seconds', {}),
            state.serving.notAfter.getTime() / 1000,
          );
        }
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    // Every step was written exactly once across the replicas per rotation (the others got 409 and re-read).
    const steps = async (step: string) =>
      (
        await Promise.all(
          replicas.map((r) =>
            registryValue(r.registry, 'admission_gateway_certificate_rotation_steps_total', { step }),
          ),
        )
      ).reduce<number>((sum, v) => sum + (v ?? 0), 0);
    const [staged, promoted] = [await steps('stage'), await steps('promote')];
    assert.ok(staged >= 1 && promoted >= 1);
    assert.equal(await steps('regenerate'), 0);
  });

  it('ships RBAC that lets the ServiceAccount manage its Secret and webhook caBundles, and nothing more', async () => {
    const kc = kubeConfig();
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const authorization = kc.makeApiClient(AuthorizationV1Api);
    const docs = await manifestDocuments('rbac.yaml');
    const byKind = (kind: string) => docs.find((d) => d.kind === kind)!;
    const clusterRole = toModel<V1ClusterRole>(byKind('ClusterRole'), 'V1ClusterRole');
    const clusterBinding = toModel<V1ClusterRoleBinding>(byKind('ClusterRoleBinding'), 'V1ClusterRoleBinding');
    const role = toModel<V1Role>(byKind('Role'), 'V1Role');
    const binding = toModel<V1RoleBinding>(byKind('RoleBinding'), 'V1RoleBinding');
    const ns = role.metadata!.namespace!;
    await core()
      .createNamespace({ body: { metadata: { name: ns } } })
      .catch((err: unknown) => {
        if (!(err instanceof ApiException && err.code === 409)) throw err;
      });
    await rbac.createClusterRole({ body: clusterRole });
    await rbac.createClusterRoleBinding({ body: clusterBinding });
    await rbac.createNamespacedRole({ namespace: ns, body: role });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: binding });
    try {
      const subject = binding.subjects![0]!;
      const may = async (verb: string, resource: string, group: string, name?: string, namespace?: string) => {
        const review = await authorization.createSubjectAccessReview({
          body: {
            spec: {
              user: `system:serviceaccount:${subject.namespace}:${subject.name}`,
              groups: ['system:serviceaccounts', `system:serviceaccounts:${subject.namespace}`, 'system:authenticated'],
              resourceAttributes: {
                verb,
                resource,
                group,
                ...(name ? { name } : {}),
                ...(namespace ? { namespace } : {}),
              },
            },
          },
        });
        return review.status?.allowed === true;
      };
      const A = 'admissionregistration.k8s.io';
      const needed: [string, string, string, string?, string?][] = [
        ['get', 'secrets', '', 'admission-gateway-tls', ns],
        ['list', 'secrets', '', 'admission-gateway-tls', ns],
        ['watch', 'secrets', '', 'admission-gateway-tls', ns],
        ['update', 'secrets', '', 'admission-gateway-tls', ns],
        ['create', 'secrets', '', undefined, ns],
        ['get', 'mutatingwebhookconfigurations', A, 'admission-gateway'],
        ['update', 'mutatingwebhookconfigurations', A, 'admission-gateway'],
        ['get', 'validatingwebhookconfigurations', A, 'admission-gateway'],
        ['update', 'validatingwebhookconfigurations', A, 'admission-gateway'],
      ];
      await eventually('the Role and ClusterRole to take effect', async () => {
        for (const [verb, resource, group, name, namespace] of needed) {
          if (!(await may(verb, resource, group, name, namespace))) {
            throw new Error(`not allowed: ${verb} ${resource} ${name ?? ''} in ${namespace ?? '(cluster)'}`);
          }
        }
        return true;
      });
      const notNeeded: [string, string, string, string?, string?][] = [
        ['get', 'secrets', '', 'another-secret', ns],
        ['list', 'secrets', '', undefined, ns],
        ['delete', 'secrets', '', 'admission-gateway-tls', ns],
        ['get', 'secrets', '', 'admission-gateway-tls', 'kube-system'],
        ['update', 'mutatingwebhookconfigurations', A, 'someone-elses'],
        ['delete', 'mutatingwebhookconfigurations', A, 'admission-gateway'],
        ['create', 'validatingwebhookconfigurations', A],
        ['list', 'validatingwebhookconfigurations', A],
      ];
      for (const [verb, resource, group, name, namespace] of notNeeded) {
        assert.equal(
          await may(verb, resource, group, name, namespace),
          false,
          `${verb} ${resource} ${name ?? ''} ${namespace ?? ''}`,
        );
      }
    } finally {
      await rbac.deleteNamespacedRoleBinding({ namespace: ns, name: binding.metadata!.name! });
      await rbac.deleteNamespacedRole({ namespace: ns, name: role.metadata!.name! });
      await rbac.deleteClusterRoleBinding({ name: clusterBinding.metadata!.name! });
      await rbac.deleteClusterRole({ name: clusterRole.metadata!.name! });
    }
  });
});
