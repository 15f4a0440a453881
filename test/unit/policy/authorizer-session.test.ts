import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AdmissionRequest, AdmissionResponse } from '../../../server/admission/types.js';
import type { AccessAnswer, AccessAttributes, AccessUser } from '../../../server/cel/index.js';
import { standaloneNamespaceLabels } from '../../../server/dispatch/reviewer.js';
import { NOT_IN_CLUSTER, type SubjectAccessChecker } from '../../../server/policy/authorizer-session.js';
import { reviewCel } from '../../../server/policy/review-cel.js';
import { chainAnswer } from '../../helpers/chain-answer.js';
import { edited, podCreate, requestOf } from '../../fixtures/reviews/index.js';

/** A VAP on Pod creation whose validations are `validations` (YAML list items), bound with Deny. */
const vap = (validations: string, extra = '') => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: { name: rbac }
spec:
  matchConstraints:
    resourceRules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
${extra}  validations:
${validations}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: rbac-binding }
spec: { policyName: rbac, validationActions: [Deny] }
`;

/** A checker that allows `alice@example.com` to create pods/exec and nothing else; what it was asked. */
function fakeApiserver(answer?: (user: AccessUser, a: AccessAttributes) => Promise<AccessAnswer>) {
  const asked: Array<[string, AccessAttributes]> = [];
  const checker: SubjectAccessChecker = {
    limits: { maxChecksPerReview: 3, checkTimeoutMs: 50 },
    check(user, attributes) {
      asked.push([user.username, attributes]);
      if (answer) return answer(user, attributes);
      const allowed =
        user.username === 'alice@example.com' &&
        attributes.kind === 'resource' &&
        attributes.resource === 'pods' &&
        attributes.subresource === 'exec';
      return Promise.resolve({ allowed, reason: allowed ? 'RBAC: allowed by RoleBinding "exec"' : '' });
    },
  };
  return { asked, checker };
}

const EXEC = "authorizer.group('').resource('pods').subresource('exec').namespace(request.namespace).check('create')";

describe('authorizer in admission policies', function () {
  let dir: string;

  beforeEach(async function () {
    dir = await mkdtemp(path.join(os.tmpdir(), 'authorizer-'));
  });

  afterEach(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  async function answer(
    policies: string,
    request: AdmissionRequest,
    checker?: SubjectAccessChecker,
    route: 'validate' | 'mutate' = 'validate',
  ): Promise<AdmissionResponse> {
    await writeFile(path.join(dir, 'p.yaml'), policies);
    const chain = `  - admissionPolicies: native\n    files: [${path.join(dir, 'p.yaml')}]\n    timeoutSeconds: 5\n`;
    return chainAnswer(chain, request, route, standaloneNamespaceLabels, checker ? { accessChecker: checker } : {});
  }

  const refusal = (r: AdmissionResponse) => (r.allowed ? 'allowed' : `${r.status?.code} ${r.status?.message}`);

  it('decides by the apiserver’s answer for the request’s user, asking each check once per review', async function () {
    const policies = vap(`    - expression: ${JSON.stringify(`${EXEC}.allowed()`)}
      message: may not exec
    - expression: ${JSON.stringify(`${EXEC}.allowed() || ${EXEC}.reason() == 'x'`)}
      messageExpression: "'still may not exec'"`);
    const alice = fakeApiserver();
    assert.equal(refusal(await answer(policies, requestOf(podCreate()), alice.checker)), 'allowed');
    assert.deepEqual(alice.asked, [
      [
        'alice@example.com',
        {
          kind: 'resource',
          verb: 'create',
          group: '',
          resource: 'pods',
          subresource: 'exec',
          namespace: 'team-a',
          name: '',
          fieldSelector: '',
          labelSelector: '',
        },
      ],
    ]);
    const bob = fakeApiserver();
    const bobs = edited(requestOf(podCreate()), { 'userInfo.username': 'bob' });
    assert.equal(
      refusal(await answer(policies, bobs, bob.checker)),
      "422 ValidatingAdmissionPolicy 'rbac' with binding 'rbac-binding' denied request: may not exec",
    );
    assert.equal(bob.asked.length, 1);
  });

  it('charges the review what one evaluation with the answers costs', async function () {
    const request = requestOf(podCreate());
    await answer(vap(`    - expression: ${JSON.stringify(`${EXEC}.allowed()`)}`), request, fakeApiserver().checker);
    // The variable, six calls and the check: the run that waited for the answer is not charged.
    assert.equal(5_000_000 - reviewCel(request).budget.remaining, 350_008);
  });

  it('gives an errored decision when the apiserver fails, times out or is not there, and never hangs', async function () {
    // Allowed when the error is `error`; else refused with the error the check gave (the test's own message).
    const policies = (error: string) =>
      vap(
        `    - expression: ${JSON.stringify(`variables.d.errored() && !variables.d.allowed() && variables.d.error() == ${JSON.stringify(error)}`)}`,
        `  variables:\n    - { name: d, expression: ${JSON.stringify(EXEC)} }\n`,
      );
    const failing = fakeApiserver(() => Promise.reject(new Error('503 Service Unavailable')));
    const failed = policies('SubjectAccessReview failed: 503 Service Unavailable');
    assert.equal(refusal(await answer(failed, requestOf(podCreate()), failing.checker)), 'allowed');
    // Never answers, and ignores its signal: the check's own time limit ends it.
    const silent = fakeApiserver(() => new Promise<AccessAnswer>(() => undefined));
    const timedOut = policies('SubjectAccessReview failed: no answer within 50 ms');
    assert.equal(refusal(await answer(timedOut, requestOf(podCreate()), silent.checker)), 'allowed');
    assert.equal(refusal(await answer(policies(NOT_IN_CLUSTER), requestOf(podCreate()))), 'allowed');
    // The same policy, with another error expected: it is the check's error that decided.
    assert.equal(
      refusal(await answer(policies('other'), requestOf(podCreate()))),
      `422 ValidatingAdmissionPolicy 'rbac' with binding 'rbac-binding' denied request: failed expression: variables.d.errored() && !variables.d.allowed() && variables.d.error() == "other"`,
    );
  });

  it('asks at most the review’s number of different checks; past it a check is errored unasked', async function () {
    const verbs = ['get', 'list', 'watch', 'delete'];
    // The fourth is past the limit: errored with why, unasked.
    const policies = vap(
      verbs
        .map((verb) => {
          const error = verb === 'delete' ? 'more than 3 different authorization checks in one review' : '';
          return `    - expression: "authorizer.group('').resource('pods').check('${verb}').error() == '${error}'"
      message: ${verb} not as expected`;
        })
        .join('\n'),
    );
    const api = fakeApiserver();
    assert.equal(refusal(await answer(policies, requestOf(podCreate()), api.checker)), 'allowed');
    assert.deepEqual(
      api.asked.map(([, a]) => a.verb),
      ['get', 'list', 'watch'],
    );
  });

  it('reads checks in variables and matchConditions, and mutates by them', async function () {
    const map = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: { name: mark }
spec:
  matchConstraints:
    resourceRules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
  reinvocationPolicy: Never
  matchConditions:
    - name: may-exec
      expression: ${JSON.stringify(`${EXEC}.allowed()`)}
  variables:
    - name: reason
      expression: ${JSON.stringify(`${EXEC}.reason()`)}
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: '[JSONPatch{op: "add", path: "/metadata/labels/exec", value: variables.reason.split(" ")[0].lowerAscii()}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: { name: mark-binding }
spec: { policyName: mark }
`;
    const alice = await answer(map, requestOf(podCreate()), fakeApiserver().checker, 'mutate');
    assert.deepEqual(JSON.parse(Buffer.from(alice.patch ?? '', 'base64').toString()), [
      { op: 'add', path: '/metadata/labels/exec', value: 'rbac:' },
    ]);
    const bob = await answer(
      map,
      edited(requestOf(podCreate()), { 'userInfo.username': 'bob' }),
      fakeApiserver().checker,
      'mutate',
    );
    assert.equal(bob.patch, undefined);
  });

  it('is not bound for messageExpressions and auditAnnotations, whose variables fail to check, as in the apiserver', async function () {
    const policies = vap(
      `    - expression: "variables.exec.allowed()"
      messageExpression: "'reason: ' + variables.exec.reason()"
      message: may exec`,
      `  variables:\n    - { name: exec, expression: ${JSON.stringify(EXEC)} }\n` +
        `  auditAnnotations:\n    - { key: exec, valueExpression: ${JSON.stringify(`${EXEC}.reason()`)} }\n`,
    );
    // Bob may not exec: refused with the fallback message, the messageExpression having failed.
    const bob = edited(requestOf(podCreate()), { 'userInfo.username': 'bob' });
    assert.equal(
      refusal(await answer(policies, bob, fakeApiserver().checker)),
      "422 ValidatingAdmissionPolicy 'rbac' with binding 'rbac-binding' denied request: may exec",
    );
    // Alice may: the auditAnnotation's check fails, under failurePolicy Fail a refusal.
    assert.equal(
      refusal(await answer(policies, requestOf(podCreate()), fakeApiserver().checker)),
      "422 ValidatingAdmissionPolicy 'rbac' with binding 'rbac-binding' denied request: " +
        `expression '${EXEC}.reason()' resulted in error: no such attribute(s): authorizer`,
    );
  });

  it('is not given to a messageExpression, as in the apiserver', async function () {
    const policies = vap(`    - expression: 'false'
      messageExpression: ${JSON.stringify(`${EXEC}.reason()`)}`);
    await assert.rejects(answer(policies, requestOf(podCreate())), /variable "authorizer" is not available/);
  });
});
