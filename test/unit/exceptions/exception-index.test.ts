import assert from 'node:assert/strict';
import type { AdmissionRequest } from '../../../server/admission/types.js';
import { ExceptionIndex } from '../../../server/exceptions/exception-index.js';
import { readException } from '../../../server/exceptions/read-exception.js';
import { edited, podCreate, requestOf } from '../../fixtures/reviews/index.js';

const DAY = 86_400_000;
const CREATED = Date.parse('2027-01-01T00:00:00Z');
const EXPIRES = '2027-03-01T00:00:00Z';
const RULES = { maxLifetimeMs: 90 * DAY, now: CREATED };
const BEFORE = Date.parse(EXPIRES) - 1;
const AT = Date.parse(EXPIRES);

function exception(name: string, spec: Record<string, unknown>, namespace: string | null = 'team-a') {
  return readException(
    {
      apiVersion: 'admissiongateway.io/v1alpha1',
      kind: namespace === null ? 'ClusterAdmissionException' : 'AdmissionException',
      metadata: { name, ...(namespace === null ? {} : { namespace }) },
      spec: { steps: ['require-labels'], expiresAt: EXPIRES, reason: 'moving', ...spec },
    },
    RULES,
  );
}

/** The pod-create fixture: Pod team-a/web by alice@example.com (groups team-a-developers, system:authenticated). */
const pod = (values: Record<string, unknown> = {}): AdmissionRequest =>
  requestOf(edited(podCreate(), Object.fromEntries(Object.entries(values).map(([k, v]) => [`request.${k}`, v]))));

const podRule = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

/** What `decide` says, in words: the exception applied, the expired one, or nothing. */
function outcome(index: ExceptionIndex, request: AdmissionRequest, now: number, step = 'require-labels'): string {
  const decision = index.decide(step, request, { team: 'a' }, now);
  if (decision?.applied) return `applied ${decision.applied.ref}`;
  if (decision?.expired) return `expired ${decision.expired.ref}`;
  return 'none';
}

describe('ExceptionIndex.decide()', () => {
  const cases: Array<{
    name: string;
    exceptions: ReturnType<typeof exception>[];
    request?: AdmissionRequest;
    now?: number;
    step?: string;
    allowedSteps?: string[];
    expected: string;
  }> = [
    {
      name: 'a namespaced exception naming the object covers it before expiresAt',
      exceptions: [exception('web', { match: { names: ['web'], rules: [podRule] } })],
      expected: 'applied AdmissionException team-a/web',
    },
    {
      name: 'at expiresAt it no longer applies, and is told as expired',
      exceptions: [exception('web', { match: { names: ['web'] } })],
      now: AT,
      expected: 'expired AdmissionException team-a/web',
    },
    {
      name: 'an exception of another namespace has no effect',
      exceptions: [exception('web', { match: { names: ['web'] } }, 'team-b')],
      expected: 'none',
    },
    {
      name: 'an exception for another step has no effect',
      exceptions: [exception('web', { match: { names: ['web'] } })],
      step: 'other-step',
      expected: 'none',
    },
    {
      name: 'another name is not covered',
      exceptions: [exception('web', { match: { names: ['api'] } })],
      expected: 'none',
    },
    {
      name: 'rules that do not select the request',
      exceptions: [exception('web', { match: { rules: [{ ...podRule, operations: ['UPDATE'] }] } })],
      expected: 'none',
    },
    {
      name: 'an objectSelector the object fails',
      exceptions: [exception('web', { match: { objectSelector: { matchLabels: { app: 'api' } } } })],
      expected: 'none',
    },
    {
      name: 'a namespaceSelector the namespace meets',
      exceptions: [exception('web', { match: { namespaceSelector: { matchLabels: { team: 'a' } } } })],
      expected: 'applied AdmissionException team-a/web',
    },
    {
      name: 'users: another user is not covered',
      exceptions: [exception('web', { match: { users: ['bob@example.com'] } })],
      expected: 'none',
    },
    {
      name: 'groups: a member of the group is covered',
      exceptions: [exception('web', { match: { groups: ['team-a-developers'] } })],
      expected: 'applied AdmissionException team-a/web',
    },
    {
      name: 'serviceAccounts: a request by that ServiceAccount is covered',
      exceptions: [exception('web', { match: { serviceAccounts: ['team-a/deployer'] } })],
      request: pod({ 'userInfo.username': 'system:serviceaccount:team-a:deployer' }),
      expected: 'applied AdmissionException team-a/web',
    },
    {
      name: 'a cluster exception naming "*" covers any step in any namespace',
      exceptions: [exception('all', { steps: ['*'], match: { names: ['web'] } }, null)],
      step: 'any-step',
      expected: 'applied ClusterAdmissionException all',
    },
    {
      name: 'allowedSteps leaves out a step: no exception applies to it',
      exceptions: [exception('all', { steps: ['*'] }, null)],
      allowedSteps: ['other-step'],
      expected: 'none',
    },
    {
      name: 'Exempt wins over Warn, whatever their order',
      exceptions: [exception('a-warn', { mode: 'Warn' }), exception('z-exempt', {})],
      expected: 'applied AdmissionException team-a/z-exempt',
    },
    {
      name: 'a live exception wins over an expired one',
      exceptions: [exception('live', {}), exception('old', { expiresAt: '2027-02-01T00:00:00Z' })],
      now: Date.parse('2027-02-15T00:00:00Z'),
      expected: 'applied AdmissionException team-a/live',
    },
    {
      name: "no exception covers a request on the gateway's own resources",
      exceptions: [exception('all', { steps: ['*'] }, null)],
      request: pod({ 'resource.group': 'admissiongateway.io', 'resource.resource': 'admissionexceptions' }),
      expected: 'none',
    },
    {
      name: 'a namespaced exception does not cover its own Namespace object',
      exceptions: [exception('ns', {})],
      request: pod({ 'resource.resource': 'namespaces', namespace: 'team-a', name: 'team-a' }),
      expected: 'none',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const index = new ExceptionIndex(c.exceptions, { allowedSteps: c.allowedSteps });
      assert.equal(outcome(index, c.request ?? pod(), c.now ?? BEFORE, c.step), c.expected);
    });
  }

  it('an empty index decides nothing and needs no namespace labels', () => {
    assert.equal(ExceptionIndex.EMPTY.decide('require-labels', pod(), undefined, BEFORE), undefined);
    assert.equal(ExceptionIndex.EMPTY.needsNamespaceLabels, false);
  });
});
