/**
 * Policies' authorization checks as SubjectAccessReviews, against a stand-in apiserver: the body sent for a resource
 * check (version `*`, selectors as raw selectors, the user's uid, groups and extra) and for a path, the status read
 * back (an evaluation error is the Decision's error), a failing apiserver rejecting, and the in-flight bound.
 */
import assert from 'node:assert/strict';
import { createSubjectAccessChecker } from '../../server/kube/subject-access-checker.js';
import {
  startStandInApiserver,
  status,
  type StandInAnswer,
  type StandInApiserver,
} from '../helpers/stand-in-apiserver.js';

const ACCESS_REVIEWS = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const USER = { username: 'alice', uid: 'u-1', groups: ['devs', 'system:authenticated'], extra: { scopes: ['a', 'b'] } };

describe('createSubjectAccessChecker()', function () {
  let apiserver: StandInApiserver;

  before(async function () {
    apiserver = await startStandInApiserver();
  });

  after(async function () {
    await apiserver.close();
  });

  const reviewed = (statusBody: object): StandInAnswer => ({
    status: 201,
    body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: {}, status: statusBody },
  });

  it('asks a resource check for the user, with any version and the selectors as written', async function () {
    const since = apiserver.requests.length;
    apiserver.answerWith(() => reviewed({ allowed: true, reason: 'RBAC: allowed by RoleBinding "r"' }));
    const checker = createSubjectAccessChecker(apiserver.kubeConfig());
    const answer = await checker.check(
      USER,
      {
        kind: 'resource',
        verb: 'list',
        group: 'apps',
        resource: 'deployments',
        subresource: 'scale',
        namespace: 'team-a',
        name: '',
        fieldSelector: 'metadata.name=web',
        labelSelector: 'app in (a, b)',
      },
      AbortSignal.timeout(5000),
    );
    assert.deepEqual(answer, { allowed: true, reason: 'RBAC: allowed by RoleBinding "r"' });
    assert.deepEqual(
      apiserver.requests.slice(since).map((r) => [r.method, r.path, r.body]),
      [
        [
          'POST',
          ACCESS_REVIEWS,
          {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: 'alice',
              uid: 'u-1',
              groups: ['devs', 'system:authenticated'],
              extra: { scopes: ['a', 'b'] },
              resourceAttributes: {
                verb: 'list',
                group: 'apps',
                version: '*',
                resource: 'deployments',
                subresource: 'scale',
                namespace: 'team-a',
                fieldSelector: { rawSelector: 'metadata.name=web' },
                labelSelector: { rawSelector: 'app in (a, b)' },
              },
            },
          },
        ],
      ],
    );
  });

  it('asks a path check, and gives the evaluation error as the Decision’s error', async function () {
    const since = apiserver.requests.length;
    apiserver.answerWith(() => reviewed({ allowed: false, reason: 'no', evaluationError: 'webhook: timeout' }));
    const checker = createSubjectAccessChecker(apiserver.kubeConfig());
    const answer = await checker.check(
      { username: 'bob' },
      { kind: 'nonResource', verb: 'get', path: '/healthz' },
      AbortSignal.timeout(5000),
    );
    assert.deepEqual(answer, { allowed: false, reason: 'no', error: 'webhook: timeout' });
    assert.deepEqual((apiserver.requests[since]!.body as { spec: object }).spec, {
      user: 'bob',
      nonResourceAttributes: { path: '/healthz', verb: 'get' },
    });
  });

  it('rejects when the apiserver refuses, and past the calls in flight without asking', async function () {
    apiserver.answerWith(() => status(403, 'Forbidden', 'cannot create subjectaccessreviews'));
    const checker = createSubjectAccessChecker(apiserver.kubeConfig(), 1);
    const path = { kind: 'nonResource', verb: 'get', path: '/x' } as const;
    await assert.rejects(checker.check({ username: 'bob' }, path, AbortSignal.timeout(5000)));
    let release: (answer: StandInAnswer) => void = () => undefined;
    apiserver.answerWith(() => new Promise<StandInAnswer>((resolve) => (release = resolve)));
    const since = apiserver.requests.length;
    const first = checker.check({ username: 'bob' }, path, AbortSignal.timeout(5000));
    await apiserver.until('the first check', () => apiserver.requests.length > since);
    await assert.rejects(
      checker.check({ username: 'bob' }, path, AbortSignal.timeout(5000)),
      /1 authorization checks are already waiting on the apiserver/,
    );
    release(reviewed({ allowed: true, reason: '' }));
    assert.deepEqual(await first, { allowed: true, reason: '' });
    assert.equal(apiserver.requests.length, since + 1);
  });
});
