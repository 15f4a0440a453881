/**
 * The e2e apiserver asks an authorization webhook before RBAC (start-cluster.sh: `--authorization-mode=
 * Webhook,RBAC`, no decision cache). A small SubjectAccessReview server written here listens where that
 * webhook calls (AUTHZ_URL, with the cluster's authz certificate): it denies the reader user get, list and
 * watch of Secrets in one namespace, with a reason, and has no opinion about anything else. RBAC lets the
 * reader read Secrets in both namespaces. What a user sees, and what the webhook is sent, is asserted;
 * then the server stops and RBAC alone decides. Last, a gateway under test takes the webhook's port.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { readFile } from 'node:fs/promises';
import type { CoreV1Api, KubeConfig, V1Status } from '@kubernetes/client-node';
import {
  AUTHZ_TLS,
  deleteNamespace,
  revokeGrant,
  AUTHZ_PORT,
  eventually,
  TEST_USERS,
  core,
  randomSuffix,
  statusOf,
  coreAs,
  apiError,
  createNamespace,
  kubeConfig,
  kubeConfigAs,
  AUTHZ_URL,
  kubeAtLeast,
  grant,
  plain,
  type TestUser,
} from './cluster.js';
import { anyFailed, startE2EGateway, type E2EGateway } from './gateway.js';
import { apiRequest } from './http.js';

const SUITE = 'authz';
const READERS_GROUP = 'e2e:readers';
const SECRET = 'app-credentials';
const REASON = 'e2e-authz: Secrets of this namespace are not for readers';
const READ_VERBS = ['get', 'list', 'watch'] as const;

/** authorization.k8s.io/v1 SubjectAccessReview as it travels (the fields the server and the tests read). */
interface SubjectAccessReview {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly spec?: {
    readonly resourceAttributes?: Readonly<Record<string, string>>;
    readonly nonResourceAttributes?: Readonly<Record<string, string>>;
    readonly user?: string;
    readonly groups?: readonly string[];
    readonly uid?: string;
    readonly extra?: Readonly<Record<string, readonly string[]>>;
  };
  readonly status?: Readonly<Record<string, unknown>>;
}

/** One call the apiserver made to the server. */
interface Received {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly contentType: string | undefined;
  readonly review: SubjectAccessReview;
}

interface AuthzServer {
  /** Every review received since the start, in arrival order. */
  readonly received: Received[];
  close(): Promise<void>;
}

function readBody(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (text += chunk));
    stream.once('end', () => resolve(text));
    stream.once('error', reject);
  });
}

/** The server's policy: deny the reader's reads of Secrets in `guarded`, no opinion on anything else. */
function decide(review: SubjectAccessReview, guarded: string): Record<string, unknown> {
  const spec = review.spec;
  const attrs = spec?.resourceAttributes;
  const guardedRead =
    spec?.user === TEST_USERS.reader.name &&
    attrs?.namespace === guarded &&
    (attrs.group ?? '') === '' &&
    attrs.resource === 'secrets' &&
    (READ_VERBS as readonly string[]).includes(attrs.verb ?? '');
  // allowed false + denied false is "no opinion": the apiserver asks the next authorizer (RBAC).
  return guardedRead ? { allowed: false, denied: true, reason: REASON } : { allowed: false, denied: false };
}

async function startAuthzServer(guarded: string): Promise<AuthzServer> {
  const [cert, key] = await Promise.all([readFile(AUTHZ_TLS.certFile), readFile(AUTHZ_TLS.keyFile)]);
  const received: Received[] = [];
  const server = https.createServer({ cert, key }, (req, res) => {
    readBody(req)
      .then((text) => {
        const review = JSON.parse(text) as SubjectAccessReview;
        received.push({ method: req.method, url: req.url, contentType: req.headers['content-type'], review });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            status: decide(review, guarded),
          }),
        );
      })
      .catch((err: unknown) => {
        // Unreadable input: a 400 fails the apiserver's call, which is no opinion (no retry for a 400).
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(err instanceof Error ? err.message : String(err));
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(AUTHZ_PORT, '127.0.0.1', () => resolve());
  });
  return {
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // The apiserver keeps its connection alive; without this the port would stay open for it.
        server.closeAllConnections();
      }),
  };
}

/** GET `apiPath` as `kc`'s user with extra headers (`-w` for `?watch=true`): apiRequest. */
const rawGet = (kc: KubeConfig, apiPath: string, headers: IncomingHttpHeaders = {}) =>
  apiRequest(kc, 'GET', apiPath, headers);

const secretsPath = (namespace: string) => `/api/v1/namespaces/${namespace}/secrets`;

/** The apiserver's 403 for `user` doing `verb` on core `resource` in `namespace`, with the authorizers' reason. */
function forbidden(
  user: TestUser,
  verb: string,
  resource: string,
  namespace: string,
  name: string | undefined,
  reason: string | undefined,
): V1Status {
  const what = name === undefined ? `${resource} is forbidden` : `${resource} "${name}" is forbidden`;
  const message =
    `${what}: User "${user.name}" cannot ${verb} resource "${resource}" in API group "" in the namespace ` +
    `"${namespace}"${reason === undefined ? '' : `: ${reason}`}`;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Forbidden',
    details: { ...(name === undefined ? {} : { name }), kind: resource },
    code: 403,
  };
}

describe('authorization webhook before RBAC (a SubjectAccessReview server on the authz port)', function () {
  // Made in `before`: the suite's kubeconfig is known only once the global setup ran.
  let reader: CoreV1Api;
  let operator: CoreV1Api;
  const role = `e2e-authz-secret-reader-${randomSuffix()}`;
  // '' until made: `after` skips what `before` did not get to.
  let guarded = '';
  let other = '';
  let authz: AuthzServer | undefined;
  let gw: E2EGateway | undefined;

  /** What the server received from `since` on about `user` in `namespace`. */
  const reviewsOf = (user: TestUser, namespace: string, since = 0) =>
    (authz?.received ?? [])
      .slice(since)
      .map((r) => r.review)
      .filter((r) => r.spec?.user === user.name && r.spec.resourceAttributes?.namespace === namespace);

  before(async function () {
    reader = coreAs(TEST_USERS.reader);
    operator = coreAs(TEST_USERS.operator);
    guarded = await createNamespace(SUITE);
    other = await createNamespace(SUITE);
    authz = await startAuthzServer(guarded);
    for (const namespace of [guarded, other]) {
      await core().createNamespacedSecret({
        namespace,
        body: { metadata: { name: SECRET }, stringData: { password: 'not-a-secret' } },
      });
    }
    // guarded's binding first: RBAC's informer delivers them in order, so once the reader can read in
    // `other`, RBAC also allows it in `guarded` (the stopped-server test relies on that).
    await grant(
      role,
      [{ apiGroups: [''], resources: ['secrets'], verbs: [...READ_VERBS] }],
      [READERS_GROUP],
      [guarded, other],
    );
    await eventually('RBAC to let the reader read Secrets', async () => {
      await reader.readNamespacedSecret({ name: SECRET, namespace: other });
      return true;
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await authz?.close();
    await revokeGrant(role, [guarded, other]);
    for (const namespace of [guarded, other]) if (namespace !== '') await deleteNamespace(namespace);
  });

  it('refuses the reader get, list and watch of Secrets in the guarded namespace: 403 with the webhook’s reason', async function () {
    const get = await apiError(reader.readNamespacedSecret({ name: SECRET, namespace: guarded }));
    assert.equal(get.code, 403);
    assert.deepEqual(statusOf(get), forbidden(TEST_USERS.reader, 'get', 'secrets', guarded, SECRET, REASON));

    const list = await apiError(reader.listNamespacedSecret({ namespace: guarded }));
    assert.equal(list.code, 403);
    assert.deepEqual(statusOf(list), forbidden(TEST_USERS.reader, 'list', 'secrets', guarded, undefined, REASON));

    const watch = await rawGet(kubeConfigAs(TEST_USERS.reader), `${secretsPath(guarded)}?watch=true`);
    assert.equal(watch.status, 403);
    assert.deepEqual(
      JSON.parse(watch.text),
      forbidden(TEST_USERS.reader, 'watch', 'secrets', guarded, undefined, REASON),
    );
  });

  it('leaves the same reads in another namespace to RBAC, which allows them (the webhook was asked)', async function () {
    const since = authz!.received.length;
    const secret = await reader.readNamespacedSecret({ name: SECRET, namespace: other });
    assert.equal(secret.metadata?.name, SECRET);
    const list = await reader.listNamespacedSecret({ namespace: other });
    assert.deepEqual(
      list.items.map((s) => s.metadata?.name),
      [SECRET],
    );
    const watch = await rawGet(kubeConfigAs(TEST_USERS.reader), `${secretsPath(other)}?watch=true`);
    assert.equal(watch.status, 200);
    const event = JSON.parse(watch.text) as { type?: string; object?: { metadata?: { name?: string } } };
    assert.deepEqual([event.type, event.object?.metadata?.name], ['ADDED', SECRET]);

    assert.deepEqual(
      reviewsOf(TEST_USERS.reader, other, since).map((r) => r.spec?.resourceAttributes?.verb),
      [...READ_VERBS],
    );
  });

  it('leaves what it has no opinion on to RBAC: RBAC’s 403 carries no reason', async function () {
    const since = authz!.received.length;
    // The operator is not a reader: the webhook has no opinion, and no RBAC binding lets it read Secrets.
    const secrets = await apiError(operator.listNamespacedSecret({ namespace: guarded }));
    assert.equal(secrets.code, 403);
    assert.deepEqual(
      statusOf(secrets),
      forbidden(TEST_USERS.operator, 'list', 'secrets', guarded, undefined, undefined),
    );
    // The reader may read Secrets, not ConfigMaps.
    const configMaps = await apiError(reader.listNamespacedConfigMap({ namespace: other }));
    assert.equal(configMaps.code, 403);
    assert.deepEqual(
      statusOf(configMaps),
      forbidden(TEST_USERS.reader, 'list', 'configmaps', other, undefined, undefined),
    );
    assert.equal(reviewsOf(TEST_USERS.operator, guarded, since).length, 1);
    assert.equal(reviewsOf(TEST_USERS.reader, other, since).length, 1);
  });

  it('sends a v1 SubjectAccessReview with the user, uid, groups and resource attributes, never cached', async function () {
    const since = authz!.received.length;
    for (let i = 0; i < 2; i++) {
      await apiError(reader.readNamespacedSecret({ name: SECRET, namespace: guarded }));
    }
    const calls = authz!.received.slice(since);
    // Both identical requests were asked about: with TTLs of 0 no answer is reused.
    assert.equal(calls.length, 2);
    const expected: SubjectAccessReview = {
      kind: 'SubjectAccessReview',
      apiVersion: 'authorization.k8s.io/v1',
      // 1.20 (the floor) sends the zero creationTimestamp as null, newer apiservers leave it out.
      metadata: kubeAtLeast(21) ? {} : { creationTimestamp: null },
      spec: {
        resourceAttributes: { namespace: guarded, verb: 'get', version: 'v1', resource: 'secrets', name: SECRET },
        user: TEST_USERS.reader.name,
        groups: [...TEST_USERS.reader.groups],
        uid: TEST_USERS.reader.uid,
      },
      status: { allowed: false },
    };
    for (const call of calls) {
      // The kubeconfig's server URL as it is, plus the client's own timeout.
      assert.deepEqual(
        [call.method, call.url, call.contentType],
        ['POST', '/authorize?timeout=30s', 'application/json'],
      );
      assert.deepEqual(call.review, expected);
    }
  });

  it('passes on the extra (and no uid) of a user the admin impersonates', async function () {
    const since = authz!.received.length;
    const answer = await rawGet(kubeConfig(), `${secretsPath(guarded)}/${SECRET}`, {
      'impersonate-user': TEST_USERS.reader.name,
      'impersonate-group': READERS_GROUP,
      'impersonate-extra-scopes': ['read', 'audit'],
    });
    assert.equal(answer.status, 403);
    assert.deepEqual(JSON.parse(answer.text), forbidden(TEST_USERS.reader, 'get', 'secrets', guarded, SECRET, REASON));
    // Only the impersonated request: the admin's right to impersonate is never asked about.
    assert.deepEqual(
      authz!.received.slice(since).map((r) => plain(r.review.spec)),
      [
        {
          resourceAttributes: { namespace: guarded, verb: 'get', version: 'v1', resource: 'secrets', name: SECRET },
          user: TEST_USERS.reader.name,
          groups: [READERS_GROUP, 'system:authenticated'],
          extra: { scopes: ['read', 'audit'] },
        },
      ],
    );
  });

  it('never asks about or refuses the admin (system:masters)', async function () {
    const admin = core();
    assert.equal((await admin.readNamespacedSecret({ name: SECRET, namespace: guarded })).metadata?.name, SECRET);
    const list = await admin.listNamespacedSecret({ namespace: guarded });
    assert.deepEqual(
      list.items.map((s) => s.metadata?.name),
      [SECRET],
    );
    const watch = await rawGet(kubeConfig(), `${secretsPath(guarded)}?watch=true`);
    assert.equal(watch.status, 200);
    // Since the server started: the admin made the namespaces, Secrets and RBAC objects, and all of this.
    assert.deepEqual(
      authz!.received.filter((r) => r.review.spec?.user === TEST_USERS.admin.name),
      [],
    );
  });

  it('with nothing listening on the port, RBAC decides: the reader reads, and what RBAC refuses answers 500', async function () {
    await authz!.close();
    authz = undefined;
    const secret = await reader.readNamespacedSecret({ name: SECRET, namespace: guarded });
    assert.equal(secret.metadata?.name, SECRET);
    const list = await reader.listNamespacedSecret({ namespace: guarded });
    assert.deepEqual(
      list.items.map((s) => s.metadata?.name),
      [SECRET],
    );
    const watch = await rawGet(kubeConfigAs(TEST_USERS.reader), `${secretsPath(guarded)}?watch=true`);
    assert.equal(watch.status, 200);

    // A failed webhook call is "no opinion" with an error: when RBAC allows, the error is dropped; when it
    // does not, the apiserver answers 500 in plain text with the error instead of a 403.
    const refused = await rawGet(kubeConfigAs(TEST_USERS.reader), `/api/v1/namespaces/${other}/configmaps`);
    assert.deepEqual(refused, {
      status: 500,
      text:
        `Internal Server Error: "/api/v1/namespaces/${other}/configmaps": Post "${AUTHZ_URL}?timeout=30s": ` +
        `dial tcp 127.0.0.1:${AUTHZ_PORT}: connect: connection refused\n`,
    });
  });

  it('lets a gateway under test serve on the authz port with the cluster’s authz certificate', async function () {
    // startE2EGateway returns once the apiserver called the gateway's admission webhooks, registered
    // with the authz CA as caBundle: the apiserver trusts the certificate its authorization webhook gets.
    gw = await startE2EGateway({
      suite: SUITE,
      chain: '[]',
      authorizationWebhook: true,
      mutating: [{ name: 'mutate', route: 'mutate', rules: [] }],
    });
    assert.equal(gw.gateway.webhookUrl, `https://127.0.0.1:${AUTHZ_PORT}`);
    await gw.close();
    gw = undefined;
  });
});
