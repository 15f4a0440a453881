import assert from 'node:assert/strict';
import {
  activation,
  CelAuthorizer,
  compile,
  createCostBudget,
  evaluate,
  type AccessAnswer,
  type AccessAttributes,
  type AccessUser,
  type EvalResult,
} from '../../../server/cel/index.js';

const ALICE: AccessUser = { username: 'alice', uid: 'u-1', groups: ['devs'] };

/** Questions answered at once with `answer`; what was asked, in order. */
function answering(answer: AccessAnswer) {
  const asked: Array<[AccessUser, AccessAttributes]> = [];
  return {
    asked,
    questions: {
      ask(user: AccessUser, attributes: AccessAttributes) {
        asked.push([user, attributes]);
        return { answer };
      },
      waited() {},
    },
  };
}

function run(expression: string, answer: AccessAnswer = { allowed: true, reason: 'by rule' }) {
  const { asked, questions } = answering(answer);
  const authorizer = new CelAuthorizer(questions, ALICE, {
    group: 'apps',
    resource: 'deployments',
    subresource: 'scale',
    namespace: 'team-a',
    name: 'web',
  });
  const compiled = compile(expression, { authorizer: true });
  assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
  const result: EvalResult = evaluate(compiled.program, activation({ authorizer }), createCostBudget());
  return { result, asked };
}

const resource = (fields: Partial<Extract<AccessAttributes, { kind: 'resource' }>>): AccessAttributes => ({
  kind: 'resource',
  verb: 'get',
  group: '',
  resource: 'pods',
  subresource: '',
  namespace: '',
  name: '',
  fieldSelector: '',
  labelSelector: '',
  ...fields,
});

describe('the authorizer library', function () {
  it('asks a resource check with every attribute the builder set, as the request’s user, and costs what the apiserver charges', function () {
    const { result, asked } = run(
      "authorizer.group('').resource('pods').subresource('exec').namespace('team-a').name('web').check('create').allowed()",
    );
    assert.deepEqual(result, { ok: true, value: true, cost: 350_007 });
    assert.deepEqual(asked, [
      [ALICE, resource({ verb: 'create', subresource: 'exec', namespace: 'team-a', name: 'web' })],
    ]);
  });

  it('asks a path check, a service account’s check and the request’s own resource', function () {
    const path = run("authorizer.path('/healthz').check('get').reason()");
    assert.deepEqual(path.result, { ok: true, value: 'by rule', cost: 350_003 });
    assert.deepEqual(path.asked, [[ALICE, { kind: 'nonResource', verb: 'get', path: '/healthz' }]]);

    const sa = run(
      "authorizer.serviceAccount('build', 'ci').group('apps').resource('deployments').check('list').allowed()",
    );
    assert.deepEqual(sa.asked, [
      [
        {
          username: 'system:serviceaccount:build:ci',
          groups: ['system:serviceaccounts', 'system:serviceaccounts:build'],
        },
        resource({ verb: 'list', group: 'apps', resource: 'deployments' }),
      ],
    ]);

    const own = run("authorizer.requestResource.check('update').allowed()");
    assert.deepEqual(own.asked, [
      [
        ALICE,
        resource({
          verb: 'update',
          group: 'apps',
          resource: 'deployments',
          subresource: 'scale',
          namespace: 'team-a',
          name: 'web',
        }),
      ],
    ]);
  });

  it('passes selectors as written, each priced as the apiserver prices parsing it', function () {
    const { result, asked } = run(
      "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=n1').labelSelector('a=b').check('list').allowed()",
    );
    // 350,000 for the check, 1 for each other call and the variable; 'spec.nodeName=n1' (16 characters) costs
    // 10 + 2 + 8 × 50 = 412, 'a=b' 10 + 1 + 2 × 50 = 111.
    assert.deepEqual(result, { ok: true, value: true, cost: 350_004 + 412 + 111 });
    assert.deepEqual(asked, [
      [ALICE, resource({ verb: 'list', fieldSelector: 'spec.nodeName=n1', labelSelector: 'a=b' })],
    ]);
  });

  it('reads an errored decision: not allowed, errored, with its error', function () {
    const answer = { allowed: false, reason: '', error: 'webhook authorizer down' };
    const check = "authorizer.path('/x').check('get')";
    assert.deepEqual(run(`${check}.allowed()`, answer).result, { ok: true, value: false, cost: 350_003 });
    assert.equal((run(`${check}.errored()`, answer).result as { value: unknown }).value, true);
    assert.equal((run(`${check}.error()`, answer).result as { value: unknown }).value, 'webhook authorizer down');
    assert.equal((run(`${check}.error()`).result as { value: unknown }).value, '');
  });

  it('lets an expression make two checks and cuts the third for cost, as the apiserver does', function () {
    const check = (verb: string) => `authorizer.group('').resource('pods').check('${verb}').allowed()`;
    assert.equal(run(`${check('get')} && ${check('list')}`).result.ok, true);
    const { result } = run(`${check('get')} && ${check('list')} && ${check('watch')}`);
    assert.deepEqual({ ok: result.ok, reason: !result.ok && result.reason }, { ok: false, reason: 'cost_exceeded' });
  });

  it('refuses what the apiserver refuses, in its words', function () {
    const message = (expression: string) => {
      const { result } = run(expression);
      return result.ok ? 'ok' : result.message;
    };
    assert.equal(message("authorizer.path(' ').check('get').allowed()"), 'path must not be empty');
    assert.equal(message("authorizer.group('').resource('').check('get').allowed()"), 'resource must not be empty');
    assert.equal(
      message("authorizer.serviceAccount('Bad', 'Bad').path('/x').check('get').allowed()"),
      'Invalid service account name',
    );
    assert.equal(
      message("authorizer.serviceAccount('Bad', 'ok').path('/x').check('get').allowed()"),
      'Invalid service account namespace',
    );
  });

  it('compiles only where it is given, and exposes no fields but requestResource', function () {
    const refused = compile("authorizer.path('/x').check('get').allowed()");
    assert.equal(refused.ok, false);
    const fields = compile("authorizer.group('').resource('pods').fields", { authorizer: true });
    assert.deepEqual(fields.ok ? 'compiled' : fields.error.message, 'No such key: fields');
  });
});
