/**
 * The shipped `access-guard` plugin against the real kube-apiserver. One gateway, in cluster mode
 * (namespace labels from its informer), serves as both the apiserver's authorization webhook (AUTHZ_URL) and a
 * validating webhook for CONNECT on pods/exec, pods/attach, pods/portforward and pods/proxy. One namespace is
 * labelled `admissiongateway.io/restricted=true`, the other is not; RBAC lets the reader and the operator read
 * Secrets and open sessions into Pods in both. What each user sees is asserted: the guard's 403s, RBAC's
 * answers where the guard has no opinion, and the apiserver's own refusal of a session into a Pod no node runs
 * (here no Pod ever gets one), which proves admission let it through.
 */
import assert from 'node:assert/strict';
import type { V1Status } from '@kubernetes/client-node';
import { RESTRICTED_LABEL } from '../../plugins/access-guard.js';
import {
  TEST_USERS,
  randomSuffix,
  kubeConfigAs,
  deleteNamespace,
  eventually,
  revokeGrant,
  core,
  grant,
  type TestUser,
} from './cluster.js';
import { anyFailed, metricValue, startE2EGateway, type E2EGateway } from './gateway.js';
import { pausePod } from './objects.js';
import { apiRequest } from './http.js';

const SUITE = 'guard';
const OPERATORS_GROUP = 'e2e:operators';
const READERS_GROUP = 'e2e:readers';
const SECRET = 'app-credentials';
const POD = 'web';
const READ_VERBS = ['get', 'list', 'watch'] as const;

/**
 * The CONNECT subresources the guard refuses: how a client asks for each, how the guard names it, and what the
 * apiserver answers once admission let it through. No Pod here is ever scheduled (no scheduler, no node), so
 * the streams fail looking for the Pod's node and the proxy for its IP: refusals that only come after every
 * admission webhook said yes.
 */
const SESSIONS = [
  {
    subresource: 'exec',
    method: 'POST',
    query: '?command=sh&stdout=true',
    what: 'exec into',
    pastAdmission: `pod ${POD} does not have a host assigned`,
  },
  {
    subresource: 'attach',
    method: 'POST',
    query: '?stdout=true',
    what: 'attach to',
    pastAdmission: `pod ${POD} does not have a host assigned`,
  },
  {
    subresource: 'portforward',
    method: 'POST',
    query: '?ports=8080',
    what: 'port-forward to',
    pastAdmission: `pod ${POD} does not have a host assigned`,
  },
  // The API's pod proxy is a GET (RBAC's `get` on pods/proxy); the Pod has no IP to proxy to.
  { subresource: 'proxy', method: 'GET', query: '', what: 'proxy to', pastAdmission: 'address not allowed' },
] as const;

const CHAIN = `
- plugin: access-guard
  settings:
    allowedGroups: ['${OPERATORS_GROUP}']
`;

/** `method apiPath` as `user` (their bearer token): apiRequest. */
const request = (user: TestUser, method: string, apiPath: string) => apiRequest(kubeConfigAs(user), method, apiPath);

/** The Status of an answer that is not a 200, with its HTTP code next to it. */
function answered(answer: { status: number; text: string }): { status: number; body: V1Status } {
  return { status: answer.status, body: JSON.parse(answer.text) as V1Status };
}

function failure(code: number, reason: string, message: string, details: V1Status['details']): V1Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

/** The apiserver's 403 for `user` doing `verb` on Secrets (in `namespace`, or at the cluster scope), with `reason`. */
function secretsForbidden(
  user: TestUser,
  verb: string,
  namespace: string | undefined,
  name: string | undefined,
  reason: string | undefined,
): { status: number; body: V1Status } {
  const what = name === undefined ? 'secrets is forbidden' : `secrets "${name}" is forbidden`;
  const where = namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
  const message =
    `${what}: User "${user.name}" cannot ${verb} resource "secrets" in API group "" ${where}` +
    (reason === undefined ? '' : `: ${reason}`);
  return {
    status: 403,
    body: failure(403, 'Forbidden', message, { ...(name === undefined ? {} : { name }), kind: 'secrets' }),
  };
}

const secretsPath = (namespace: string) => `/api/v1/namespaces/${namespace}/secrets`;
const sessionPath = (namespace: string, session: (typeof SESSIONS)[number]) =>
  `/api/v1/namespaces/${namespace}/pods/${POD}/${session.subresource}${session.query}`;

/** Each read as a client makes it: GET one Secret, list them, watch them (kubectl's `-w`). */
const reads = (namespace: string) =>
  [
    ['get', `${secretsPath(namespace)}/${SECRET}`, SECRET],
    ['list', secretsPath(namespace), undefined],
    ['watch', `${secretsPath(namespace)}?watch=true`, undefined],
  ] as const;

/** What a successful read answered: the Secret's name (get), the names listed, or the first watch event. */
function readResult(verb: (typeof READ_VERBS)[number], text: string): unknown {
  const body = JSON.parse(text) as {
    metadata?: { name?: string };
    items?: { metadata?: { name?: string } }[];
    type?: string;
    object?: { metadata?: { name?: string } };
  };
  if (verb === 'get') return body.metadata?.name;
  if (verb === 'list') return body.items?.map((s) => s.metadata?.name);
  return [body.type, body.object?.metadata?.name];
}

const SUCCESSFUL_READ: Readonly<Record<(typeof READ_VERBS)[number], unknown>> = {
  get: SECRET,
  list: [SECRET],
  watch: ['ADDED', SECRET],
};

describe('access-guard: Secrets and Pod sessions of restricted namespaces (authorization webhook + CONNECT admission)', function () {
  const role = `e2e-guard-${randomSuffix()}`;
  // '' until made: `after` skips what `before` did not get to.
  let restricted = '';
  let open = '';
  let gw: E2EGateway | undefined;
  let readsDenied = '';
  let denied = '';

  /** The apiserver's answer when access-guard refuses, in admission, a session into a Pod of `restricted`. */
  const sessionRefused = (what: string) => ({
    status: 403,
    body: failure(
      403,
      'Forbidden',
      `${denied}access-guard: namespace ${restricted} is restricted (${RESTRICTED_LABEL}=true): ` +
        `only members of ${OPERATORS_GROUP} may ${what} its Pods`,
      undefined,
    ),
  });

  /** access-guard's reason for refusing a read of `namespace`'s Secrets. */
  const readReason = (namespace: string) =>
    `access-guard: namespace ${namespace} is restricted (${RESTRICTED_LABEL}=true): ` +
    `only members of ${OPERATORS_GROUP} may read its Secrets`;

  before(async function () {
    gw = await startE2EGateway({
      suite: SUITE,
      chain: CHAIN,
      authorizationWebhook: true,
      clusterMode: { backoff: { initialMs: 200, maxMs: 1000 } },
      validating: [
        {
          name: 'validate',
          route: 'validate',
          rules: [
            {
              operations: ['CONNECT'],
              apiGroups: [''],
              apiVersions: ['v1'],
              resources: SESSIONS.map((s) => `pods/${s.subresource}`),
            },
          ],
        },
      ],
    });
    denied = `admission webhook "${gw.webhookName('validate')}" denied the request: `;
    restricted = await gw.namespace();
    open = await gw.namespace();
    readsDenied = readReason(restricted);
    for (const namespace of [restricted, open]) {
      await core().createNamespacedSecret({
        namespace,
        body: { metadata: { name: SECRET }, stringData: { password: 'not-a-secret' } },
      });
      // No node and no scheduler: the Pod stays Pending with no node, which is all a session needs to be asked for.
      await core().createNamespacedPod({ namespace, body: pausePod(POD) });
    }
    await grant(
      role,
      [
        { apiGroups: [''], resources: ['secrets'], verbs: [...READ_VERBS] },
        { apiGroups: [''], resources: ['pods/exec', 'pods/attach', 'pods/portforward'], verbs: ['create'] },
        { apiGroups: [''], resources: ['pods/proxy'], verbs: ['get'] },
      ],
      [READERS_GROUP, OPERATORS_GROUP],
      [restricted, open],
    );
    // Not labelled yet: the guard has no opinion, so RBAC (once its informer has the bindings) lets the reader in.
    await eventually('RBAC to let the reader read Secrets of the namespace still unlabelled', async () => {
      const answer = await request(TEST_USERS.reader, 'GET', `${secretsPath(restricted)}/${SECRET}`);
      return answer.status === 200 ? true : undefined;
    });
    const namespace = await core().readNamespace({ name: restricted });
    namespace.metadata = {
      ...namespace.metadata,
      labels: { ...namespace.metadata?.labels, [RESTRICTED_LABEL]: 'true' },
    };
    await core().replaceNamespace({ name: restricted, body: namespace });
    // The guard acts once the gateway's namespace informer has delivered the label.
    await eventually('the gateway to see the restricted label and refuse the reader', async () => {
      const answer = await request(TEST_USERS.reader, 'GET', `${secretsPath(restricted)}/${SECRET}`);
      return answer.status === 403 ? true : undefined;
    });
  });

  after(async function () {
    await gw?.close({ keepDir: anyFailed(this.test!.parent!) });
    await revokeGrant(role, [restricted, open]);
    for (const namespace of [restricted, open]) if (namespace !== '') await deleteNamespace(namespace);
  });

  it('refuses the reader get, list and watch of Secrets in the restricted namespace: 403 ending in the guard’s reason', async function () {
    for (const [verb, apiPath, name] of reads(restricted)) {
      assert.deepEqual(
        answered(await request(TEST_USERS.reader, 'GET', apiPath)),
        secretsForbidden(TEST_USERS.reader, verb, restricted, name, readsDenied),
        verb,
      );
    }
  });

  it('lets the reader get, list and watch Secrets of the open namespace (RBAC decides)', async function () {
    for (const [verb, apiPath] of reads(open)) {
      const answer = await request(TEST_USERS.reader, 'GET', apiPath);
      assert.equal(answer.status, 200, `${verb}: ${answer.text}`);
      assert.deepEqual(readResult(verb, answer.text), SUCCESSFUL_READ[verb], verb);
    }
  });

  it('lets a member of e2e:operators get, list and watch Secrets of the restricted namespace', async function () {
    for (const [verb, apiPath] of reads(restricted)) {
      const answer = await request(TEST_USERS.operator, 'GET', apiPath);
      assert.equal(answer.status, 200, `${verb}: ${answer.text}`);
      assert.deepEqual(readResult(verb, answer.text), SUCCESSFUL_READ[verb], verb);
    }
  });

  it('refuses the reader Secrets across all namespaces (clusterWideReads: forbid), leaves the operator’s to RBAC', async function () {
    for (const [verb, query] of [
      ['list', ''],
      ['watch', '?watch=true'],
    ] as const) {
      assert.deepEqual(
        answered(await request(TEST_USERS.reader, 'GET', `/api/v1/secrets${query}`)),
        secretsForbidden(
          TEST_USERS.reader,
          verb,
          undefined,
          undefined,
          `access-guard: Secrets cannot be read across all namespaces while namespaces labelled ` +
            `${RESTRICTED_LABEL}=true exist: ${verb} them one namespace at a time`,
        ),
        verb,
      );
      // An allowed group gets no opinion from the guard; RBAC grants nobody here Secrets at the cluster scope.
      assert.deepEqual(
        answered(await request(TEST_USERS.operator, 'GET', `/api/v1/secrets${query}`)),
        secretsForbidden(TEST_USERS.operator, verb, undefined, undefined, undefined),
        verb,
      );
    }
  });

  it('never refuses the admin (system:masters) a read of the restricted namespace’s Secrets', async function () {
    for (const [verb, apiPath] of reads(restricted)) {
      const answer = await request(TEST_USERS.admin, 'GET', apiPath);
      assert.equal(answer.status, 200, `${verb}: ${answer.text}`);
      assert.deepEqual(readResult(verb, answer.text), SUCCESSFUL_READ[verb], verb);
    }
    // Across all namespaces too: the apiserver allows system:masters before asking the gateway.
    const everywhere = await request(TEST_USERS.admin, 'GET', '/api/v1/secrets');
    assert.equal(everywhere.status, 200, everywhere.text);
    const names = (JSON.parse(everywhere.text) as { items?: { metadata?: { namespace?: string } }[] }).items?.map(
      (s) => s.metadata?.namespace,
    );
    assert.ok(names?.includes(restricted), `namespaces of the Secrets listed: ${JSON.stringify(names)}`);
  });

  for (const session of SESSIONS) {
    it(`refuses the reader ${session.subresource} into a Pod of the restricted namespace, in admission`, async function () {
      assert.deepEqual(
        answered(await request(TEST_USERS.reader, session.method, sessionPath(restricted, session))),
        sessionRefused(session.what),
      );
    });
  }

  for (const session of SESSIONS) {
    it(`lets the reader ${session.subresource} into the open namespace, the operator into the restricted one: past admission`, async function () {
      const pastAdmission = {
        status: 400,
        body: failure(400, 'BadRequest', session.pastAdmission, undefined),
      };
      assert.deepEqual(
        answered(await request(TEST_USERS.reader, session.method, sessionPath(open, session))),
        pastAdmission,
      );
      assert.deepEqual(
        answered(await request(TEST_USERS.operator, session.method, sessionPath(restricted, session))),
        pastAdmission,
      );
    });
  }

  it('lets the admin (system:masters) exec into a Pod of the restricted namespace: past admission', async function () {
    // Admission runs for every user (unlike authorization, which the apiserver skips for system:masters): the
    // guard exempts system:masters itself, so cluster admins can always get in to repair.
    const exec = SESSIONS[0];
    assert.deepEqual(answered(await request(TEST_USERS.admin, exec.method, sessionPath(restricted, exec))), {
      status: 400,
      body: failure(400, 'BadRequest', exec.pastAdmission, undefined),
    });
  });

  it('counts each authorize decision and keeps its namespace watch connected (/metrics)', async function () {
    const decisions = async () => {
      const text = await gw!.metrics();
      const value = (name: string, labels: Readonly<Record<string, string>>) => metricValue(text, name, labels) ?? 0;
      return {
        denied: value('admission_gateway_authorize_requests_total', { decision: 'denied' }),
        noOpinion: value('admission_gateway_authorize_requests_total', { decision: 'no_opinion' }),
        guardDenied: value('admission_gateway_step_calls_total', {
          step: 'access-guard',
          phase: 'authorize',
          outcome: 'denied',
        }),
        guardNoOpinion: value('admission_gateway_step_calls_total', {
          step: 'access-guard',
          phase: 'authorize',
          outcome: 'no_opinion',
        }),
      };
    };
    const before = await decisions();
    // Every earlier test was counted too.
    assert.ok(before.denied > 0 && before.guardDenied > 0, JSON.stringify(before));
    // Only the tests' users reach the gateway (the admin and the apiserver's loopback client are system:masters),
    // so these two reads are exactly what is counted in between.
    assert.equal((await request(TEST_USERS.reader, 'GET', `${secretsPath(restricted)}/${SECRET}`)).status, 403);
    assert.equal((await request(TEST_USERS.reader, 'GET', `${secretsPath(open)}/${SECRET}`)).status, 200);
    assert.deepEqual(await decisions(), {
      denied: before.denied + 1,
      noOpinion: before.noOpinion + 1,
      guardDenied: before.guardDenied + 1,
      guardNoOpinion: before.guardNoOpinion + 1,
    });
    assert.equal(
      metricValue(await gw!.metrics(), 'admission_gateway_kube_watch_connected', { resource: 'namespaces' }),
      1,
    );
  });
});
