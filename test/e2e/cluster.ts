/**
 * The real kube-apiserver + etcd the e2e suite runs against (test/e2e/cluster/*.sh), and small helpers
 * for talking to it with @kubernetes/client-node 1.4 (object-param calls that return the body; errors
 * are ApiException with `.code` and the response body as a string).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  AdmissionregistrationV1Api,
  ApiException,
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
  type V1Status,
} from '@kubernetes/client-node';

const run = promisify(execFile);

export const SCRIPTS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cluster');
/** Where the apiserver is built and run (the build is shared with anything else using the default). */
export const CLUSTER_DIR = process.env.KUBE_E2E_DIR || path.join(os.homedir(), '.cache', 'kube-e2e');
/** Non-default ports, so the suite does not collide with a cluster started by hand on 6443/2379. */
export const APISERVER_PORT = Number(process.env.KUBE_E2E_APISERVER_PORT || 16443);
export const ETCD_PORT = Number(process.env.KUBE_E2E_ETCD_PORT || 12379);
/**
 * Where the apiserver's authorization webhook calls (`https://127.0.0.1:<port>/authorize`), asked before
 * RBAC about every request outside system:masters; nothing listens unless a test serves it. Next to the
 * apiserver's port by default, so suites started on other apiserver ports do not share it.
 */
export const AUTHZ_PORT = Number(process.env.KUBE_E2E_AUTHZ_PORT || APISERVER_PORT + 1);
/** PIDs, logs and etcd data; KUBE_E2E_RUN_DIR (with other ports) lets several suites run at once. */
export const RUN_DIR = process.env.KUBE_E2E_RUN_DIR || path.join(CLUSTER_DIR, 'run');
/** The PKI start-cluster.sh makes once and every suite using CLUSTER_DIR shares. */
export const PKI_DIR = path.join(CLUSTER_DIR, 'pki');
/** The apiserver's audit log (JSON lines; writes at Metadata level: start-cluster.sh). */
export const AUDIT_LOG = path.join(RUN_DIR, 'audit.log');
/** The URL the apiserver's authorization webhook POSTs SubjectAccessReviews to (its kubeconfig's server). */
export const AUTHZ_URL = `https://127.0.0.1:${AUTHZ_PORT}/authorize`;
/**
 * What an authorization webhook under test serves with: a certificate for 127.0.0.1 and localhost, its
 * key, and the CA the apiserver's webhook kubeconfig trusts. Made once; never changes afterwards.
 */
export const AUTHZ_TLS = {
  certFile: path.join(PKI_DIR, 'authz.crt'),
  keyFile: path.join(PKI_DIR, 'authz.key'),
  caFile: path.join(PKI_DIR, 'authz-ca.crt'),
} as const;
/**
 * The client certificate the apiserver can present to webhooks (start-cluster.sh makes it once): its key, and
 * the CA that signed it, which a gateway asking for client certificates trusts (server.tls.clientCAFile).
 */
export const WEBHOOK_CLIENT_TLS = {
  certFile: path.join(PKI_DIR, 'webhook-client.crt'),
  keyFile: path.join(PKI_DIR, 'webhook-client.key'),
  caFile: path.join(PKI_DIR, 'webhook-client-ca.crt'),
} as const;

export interface TestUser {
  readonly name: string;
  readonly token: string;
  readonly uid: string;
  /** As the apiserver sees them: the token file's group, then the one every authenticated user gets. */
  readonly groups: readonly string[];
}

/** The static-token users of start-cluster.sh (its header has the same table; tokens.csv is written from it). */
export const TEST_USERS = {
  /** system:masters: allowed before any authorizer, the webhook included, is asked. */
  admin: {
    name: 'admin',
    token: 'admin-token-e2e',
    uid: 'admin-uid',
    groups: ['system:masters', 'system:authenticated'],
  },
  reader: {
    name: 'e2e-reader',
    token: 'reader-token-e2e',
    uid: 'e2e-reader-uid',
    groups: ['e2e:readers', 'system:authenticated'],
  },
  operator: {
    name: 'e2e-operator',
    token: 'operator-token-e2e',
    uid: 'e2e-operator-uid',
    groups: ['e2e:operators', 'system:authenticated'],
  },
} as const satisfies Readonly<Record<string, TestUser>>;

/** Set by the global setup; test files load the kubeconfig from it. */
export const KUBECONFIG_ENV = 'ADMISSION_GATEWAY_E2E_KUBECONFIG';

/** Set by the global setup from the apiserver's /version: `1.37.2`. */
export const KUBE_VERSION_ENV = 'ADMISSION_GATEWAY_E2E_KUBE_VERSION';

/** A first build from Go modules takes about 10 minutes on 2 cores, Debian's 1.20 about 6: room for a slow machine. */
const BUILD_TIMEOUT_MS = 30 * 60_000;
const START_TIMEOUT_MS = 3 * 60_000;

function scriptEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    KUBE_E2E_DIR: CLUSTER_DIR,
    KUBE_E2E_APISERVER_PORT: String(APISERVER_PORT),
    KUBE_E2E_ETCD_PORT: String(ETCD_PORT),
    KUBE_E2E_RUN_DIR: RUN_DIR,
    KUBE_E2E_AUTHZ_PORT: String(AUTHZ_PORT),
  };
}

async function script(name: string, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    const { stdout } = await run('bash', [path.join(SCRIPTS, name), CLUSTER_DIR], {
      env: { ...scriptEnv(), ...env },
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${name} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`, { cause: err });
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function pidFile(name: string): Promise<number | undefined> {
  const file = path.join(RUN_DIR, `${name}.pid`);
  if (!existsSync(file)) return undefined;
  const pid = Number((await readFile(file, 'utf8')).trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

async function commandLine(pid: number): Promise<string | undefined> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ');
  } catch {
    return undefined; // not running
  }
}

/**
 * Stops a cluster a previous (interrupted) run left behind — by its PID files, and only when those
 * processes are the ones on our ports; a cluster on other ports in the same DIR is someone else's.
 */
async function stopLeftover(): Promise<void> {
  const expected: Record<string, string> = {
    apiserver: `--secure-port=${APISERVER_PORT}`,
    etcd: `http://127.0.0.1:${ETCD_PORT}`,
  };
  let ours = false;
  for (const [name, marker] of Object.entries(expected)) {
    const pid = await pidFile(name);
    if (pid === undefined) continue;
    const cmd = await commandLine(pid);
    if (cmd === undefined) continue;
    if (!cmd.includes(marker)) {
      throw new Error(
        `${RUN_DIR}/${name}.pid points at a running process (pid ${pid}) that is not on the suite's ports ` +
          `(${marker}); it belongs to another cluster in ${CLUSTER_DIR}. Stop it with ` +
          `test/e2e/cluster/stop-cluster.sh, or set KUBE_E2E_DIR to a different directory.`,
      );
    }
    ours = true;
  }
  if (ours) await stopCluster();
}

/** Builds the apiserver if needed (instant when built), then starts etcd + kube-apiserver; returns the kubeconfig path. */
export async function startCluster(): Promise<string> {
  await script('build-kube-apiserver.sh', BUILD_TIMEOUT_MS);
  await stopLeftover();
  // The authz port too: a stranger answering there would decide what the tests' users may do.
  for (const port of [APISERVER_PORT, ETCD_PORT, ETCD_PORT + 1, AUTHZ_PORT]) {
    if (await listening(port)) {
      throw new Error(
        `port ${port} on 127.0.0.1 is already in use; set KUBE_E2E_APISERVER_PORT / KUBE_E2E_ETCD_PORT ` +
          '(etcd also uses the next port for peers) / KUBE_E2E_AUTHZ_PORT',
      );
    }
  }
  const out = await script('start-cluster.sh', START_TIMEOUT_MS);
  const kubeconfig = out.trim().split('\n').pop() ?? '';
  if (!existsSync(kubeconfig)) throw new Error(`start-cluster.sh did not print a kubeconfig path:\n${out}`);
  return kubeconfig;
}

export async function stopCluster(): Promise<void> {
  await script('stop-cluster.sh', 60_000);
}

/** Whether `pid` is a live process (a zombie nobody has reaped yet counts as gone). */
async function alive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Kills the suite's kube-apiserver (by its PID file, after checking it is the one on our port) and waits
 * until it is gone and its port closed; etcd and its data keep running. SIGKILL, a crash: the apiserver keeps
 * no state of its own, and clients see their watches cut at once rather than drained.
 */
export async function stopApiserver(): Promise<void> {
  const pid = await pidFile('apiserver');
  if (pid === undefined) throw new Error(`no ${RUN_DIR}/apiserver.pid: the suite's cluster is not running`);
  const cmd = await commandLine(pid);
  if (!cmd?.includes(`--secure-port=${APISERVER_PORT}`)) {
    throw new Error(`pid ${pid} (${RUN_DIR}/apiserver.pid) is not the suite's kube-apiserver: ${cmd ?? 'not running'}`);
  }
  process.kill(pid, 'SIGKILL');
  await eventually(`kube-apiserver (pid ${pid}) to exit and port ${APISERVER_PORT} to close`, async () =>
    (await alive(pid)) || (await listening(APISERVER_PORT)) ? undefined : true,
  );
}

/** How a restarted apiserver is configured beyond the suite's defaults (start-cluster.sh's header). */
export interface ApiserverSettings {
  /** An AuthorizationConfiguration file (1.32+), instead of the webhook-then-RBAC flags. */
  readonly authorizationConfig?: string;
  /** `127.0.0.1:<port>` of an OTLP/gRPC receiver for the apiserver's spans, sampled at 100 % (1.34+). */
  readonly tracingEndpoint?: string;
  /** An AdmissionConfiguration: `--admission-control-config-file`. */
  readonly admissionConfig?: string;
  /** Another kubeconfig for the authorization webhook (with the flags, not `authorizationConfig`). */
  readonly authorizationKubeconfig?: string;
}

/**
 * Starts kube-apiserver again against the running etcd (start-cluster.sh with APISERVER_ONLY=1), with the
 * suite's defaults or `settings`; waits for /readyz.
 */
export async function startApiserver(settings: ApiserverSettings = {}): Promise<void> {
  await script('start-cluster.sh', START_TIMEOUT_MS, {
    APISERVER_ONLY: '1',
    KUBE_E2E_AUTHORIZATION_CONFIG: settings.authorizationConfig ?? '',
    KUBE_E2E_TRACING_ENDPOINT: settings.tracingEndpoint ?? '',
    KUBE_E2E_ADMISSION_CONFIG: settings.admissionConfig ?? '',
    KUBE_E2E_AUTHORIZATION_KUBECONFIG: settings.authorizationKubeconfig ?? '',
  });
}

/** Restarts the apiserver with `settings` (the objects in etcd stay). */
export async function restartApiserver(settings: ApiserverSettings = {}): Promise<void> {
  await stopApiserver();
  await startApiserver(settings);
}

/** The apiserver's version as the global setup read it from /version: [major, minor, patch]. */
export function kubeVersion(): readonly [number, number, number] {
  const text = process.env[KUBE_VERSION_ENV];
  const parts = text?.split('.').map(Number);
  if (!parts || parts.length !== 3 || parts.some((n) => !Number.isInteger(n))) {
    throw new Error(`${KUBE_VERSION_ENV} is "${text ?? ''}": run the suite with npm run test:e2e (test/e2e/setup.ts)`);
  }
  return [parts[0]!, parts[1]!, parts[2]!];
}

/** Whether the apiserver is at least 1.`minor`. */
export const kubeAtLeast = (minor: number): boolean => kubeVersion()[1] >= minor;

/**
 * Skips the running test, or from a `before` hook every test of its describe, when the apiserver is older
 * than 1.`minor`, and says why in each skipped test's title: the reporter lists it as pending with
 * "needs Kubernetes ≥ 1.<minor> (<feature>); this apiserver is <version>", never as passed.
 */
export function requireKube(ctx: Mocha.Context, minor: number, feature: string): void {
  if (kubeAtLeast(minor)) return;
  skipBecause(ctx, `needs Kubernetes ≥ 1.${minor} (${feature}); this apiserver is ${kubeVersion().join('.')}`);
}

/** Skips as `requireKube` does, for another reason the version gives (`[skipped: <reason>]` in the title). */
export function skipBecause(ctx: Mocha.Context, why: string): never {
  const reason = ` [skipped: ${why}]`;
  const runnable = ctx.test;
  // In a before hook `ctx.test` is the hook (mocha's runtime `type`, which its typings leave out).
  const isHook = (runnable as { type?: string } | undefined)?.type === 'hook';
  const tests = isHook ? allTests(runnable?.parent) : runnable ? [runnable] : [];
  for (const test of tests) if (!test.title.endsWith(']')) test.title += reason;
  return ctx.skip();
}

function allTests(suite: Mocha.Suite | undefined): Mocha.Runnable[] {
  return suite ? [...suite.tests, ...suite.suites.flatMap((s) => allTests(s))] : [];
}

/** A KubeConfig of its own, loaded from the suite's kubeconfig (e.g. for a gateway in cluster mode). */
export function newKubeConfig(): KubeConfig {
  const file = process.env[KUBECONFIG_ENV];
  if (!file) throw new Error(`${KUBECONFIG_ENV} is not set: run the suite with npm run test:e2e (test/e2e/setup.ts)`);
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

let loaded: KubeConfig | undefined;

export function kubeConfig(): KubeConfig {
  loaded ??= newKubeConfig();
  return loaded;
}

/** A KubeConfig for the suite's apiserver (its server and CA) that authenticates with `user`'s token. */
export function kubeConfigAs(user: TestUser): KubeConfig {
  const cluster = newKubeConfig().getCurrentCluster();
  if (!cluster) throw new Error(`the suite's kubeconfig (${process.env[KUBECONFIG_ENV]}) has no current cluster`);
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(cluster, { name: user.name, token: user.token });
  return kc;
}

/** A CoreV1Api acting as `user`. */
export const coreAs = (user: TestUser): CoreV1Api => kubeConfigAs(user).makeApiClient(CoreV1Api);

export const core = (): CoreV1Api => kubeConfig().makeApiClient(CoreV1Api);
export const apps = (): AppsV1Api => kubeConfig().makeApiClient(AppsV1Api);
export const admissionRegistration = (): AdmissionregistrationV1Api =>
  kubeConfig().makeApiClient(AdmissionregistrationV1Api);

/** A short random suffix for object names (deleted namespaces stay Terminating: never reuse a name). */
export function randomSuffix(): string {
  return randomBytes(4).toString('hex');
}

/** The label that ties a namespace to one test file's webhook configurations (their namespaceSelector). */
export const SUITE_LABEL = 'e2e.admissiongateway.io/suite';

/** Creates a fresh namespace `<suite>-<random>` labelled for `suite`'s webhooks. */
export async function createNamespace(suite: string): Promise<string> {
  const name = `${suite}-${randomSuffix()}`;
  await core().createNamespace({ body: { metadata: { name, labels: { [SUITE_LABEL]: suite } } } });
  return name;
}

/** Deletes a namespace; without a controller-manager it stays Terminating, which is harmless. */
export async function deleteNamespace(name: string): Promise<void> {
  await core()
    .deleteNamespace({ name })
    .catch((err: unknown) => {
      if (!(err instanceof ApiException && err.code === 404)) throw err;
    });
}

/** The rejection of `promise` as an ApiException; fails when it resolves or rejects with anything else. */
export async function apiError(promise: Promise<unknown>): Promise<ApiException<unknown>> {
  let value: unknown;
  try {
    value = await promise;
  } catch (err) {
    if (err instanceof ApiException) return err;
    throw err;
  }
  throw new Error(`expected the apiserver to refuse the request, but it answered ${JSON.stringify(value)}`);
}

/** The Status object the apiserver sent with an error. */
export function statusOf(err: ApiException<unknown>): V1Status {
  const body = err.body;
  if (typeof body === 'string') return JSON.parse(body) as V1Status;
  if (typeof body === 'object' && body !== null) return body;
  throw new Error(`ApiException ${err.code} carries no Status body: ${JSON.stringify(body)}`);
}

/** HTTP status of a read: 200 when the object exists, else the error code (404 when it does not). */
export async function readStatus(read: () => Promise<unknown>): Promise<number> {
  try {
    await read();
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

/**
 * The texts of the `Warning` response headers (RFC 7234 `299 - "text"`). node-fetch (which client-node
 * uses) joins repeated headers with ", ", so the value is split on quoted-string boundaries, not on commas.
 */
export function warningTexts(headers: Readonly<Record<string, string>>): string[] {
  const raw = headers.warning ?? headers.Warning;
  if (!raw) return [];
  const texts: string[] = [];
  const item = /\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"(?:\s+"(?:[^"\\]|\\.)*")?\s*(?:,|$)/y;
  while (item.lastIndex < raw.length) {
    const at = item.lastIndex;
    const m = item.exec(raw);
    if (!m) throw new Error(`unparsable Warning header at character ${at}: ${raw}`);
    texts.push((m[1] ?? '').replace(/\\(.)/g, '$1'));
  }
  return texts;
}

/** Polls `check` until it returns a value other than undefined, or throws the last reason at the deadline. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  { timeoutMs = 30_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const reason =
        last instanceof Error ? last.message : last === undefined ? 'condition not met' : JSON.stringify(last);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${reason}`, { cause: last });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A client-node model instance as plain JSON (deepStrictEqual compares prototypes). */
export function plain(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

const rbacApi = (): RbacAuthorizationV1Api => kubeConfig().makeApiClient(RbacAuthorizationV1Api);

/** Lets `groups` do `rules` in each of `namespaces`: a ClusterRole named `role`, a RoleBinding of it in each. */
export async function grant(
  role: string,
  rules: V1PolicyRule[],
  groups: readonly string[],
  namespaces: readonly string[],
): Promise<void> {
  await rbacApi().createClusterRole({ body: { metadata: { name: role }, rules } });
  for (const namespace of namespaces) {
    await rbacApi().createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: role },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: groups.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name })),
      },
    });
  }
}

/**
 * Removes what `grant` made, whatever part of it exists. Deleted namespaces stay Terminating here (no
 * controller-manager), so their bindings are removed themselves.
 */
export async function revokeGrant(role: string, namespaces: readonly string[]): Promise<void> {
  const ignoreMissing = (err: unknown) => {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  };
  for (const namespace of namespaces) {
    if (namespace) await rbacApi().deleteNamespacedRoleBinding({ name: role, namespace }).catch(ignoreMissing);
  }
  await rbacApi().deleteClusterRole({ name: role }).catch(ignoreMissing);
}
