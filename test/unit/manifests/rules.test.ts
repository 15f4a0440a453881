import assert from 'node:assert/strict';
import type { AdmissionRequest, RuleWithOperations } from '../../../server/plugin-api/types.js';
import { compileMatch } from '../../../server/steps/match.js';
import { resourceCovers, unionRules } from '../../../server/manifests/rules.js';

const rule = (
  operations: RuleWithOperations['operations'],
  apiGroups: string[],
  resources: string[],
  extra: Partial<RuleWithOperations> = {},
): RuleWithOperations => ({ operations, apiGroups, apiVersions: ['*'], resources, scope: '*', ...extra });

/** A request for `matches`: only what rules look at. */
function request(
  operation: AdmissionRequest['operation'],
  group: string,
  resource: string,
  subResource = '',
  namespace = 'team-a',
): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group, version: 'v1', kind: 'X' },
    resource: { group, version: 'v1', resource },
    ...(subResource ? { subResource } : {}),
    requestKind: { group, version: 'v1', kind: 'X' },
    requestResource: { group, version: 'v1', resource },
    name: 'x',
    namespace,
    operation,
    userInfo: { username: 'u' },
    object: { metadata: { name: 'x' } },
  };
}

/** Whether a set of rules (as a webhook would hold them) matches a request, by the gateway's own matcher. */
const matches = (rules: readonly RuleWithOperations[], req: AdmissionRequest) =>
  compileMatch({ rules }).matches(req, undefined) === undefined;

describe('unionRules()', () => {
  it('merges rules with equal operations, groups, versions and scope into one with the union of resources', () => {
    assert.deepEqual(
      unionRules([
        rule(['CREATE', 'UPDATE'], ['', 'apps'], ['pods', 'deployments']),
        rule(['UPDATE', 'CREATE'], ['apps', ''], ['deployments', 'services']),
      ]),
      [rule(['CREATE', 'UPDATE'], ['', 'apps'], ['pods', 'deployments', 'services'])],
    );
  });

  it('keeps rules apart when their operations, groups or scope differ', () => {
    const rules = [
      rule(['CREATE'], [''], ['pods']),
      rule(['DELETE'], [''], ['configmaps']),
      rule(['CREATE'], ['apps'], ['deployments']),
      rule(['CREATE'], [''], ['namespaces'], { scope: 'Cluster' }),
    ];
    assert.deepEqual(unionRules(rules), rules);
  });

  it('drops a rule that a wider rule covers, and a covered resource of a partly covered rule', () => {
    assert.deepEqual(
      unionRules([
        rule(['CREATE', 'UPDATE'], ['*'], ['*']),
        rule(['CREATE'], ['', 'apps'], ['pods', 'deployments']),
        rule(['CREATE', 'UPDATE'], ['', 'apps'], ['pods', 'pods/ephemeralcontainers']),
      ]),
      [
        rule(['CREATE', 'UPDATE'], ['*'], ['*']),
        rule(['CREATE', 'UPDATE'], ['', 'apps'], ['pods/ephemeralcontainers']),
      ],
    );
  });

  it('does not drop a rule whose operations reach beyond the wider rule', () => {
    const rules = [rule(['CREATE'], ['*'], ['*']), rule(['CREATE', 'DELETE'], [''], ['pods'])];
    assert.deepEqual(unionRules(rules), rules);
  });

  it('treats an absent scope as "*" and a scoped rule as covered by it', () => {
    assert.deepEqual(
      unionRules([
        rule(['CREATE'], [''], ['pods'], { scope: 'Namespaced' }),
        { operations: ['CREATE'], apiGroups: [''], apiVersions: ['*'], resources: ['pods', 'nodes'] },
      ]),
      [rule(['CREATE'], [''], ['pods', 'nodes'], { scope: '*' })],
    );
  });

  it('writes a list holding "*" as just ["*"] and drops resources another entry covers (valid for the apiserver)', () => {
    assert.deepEqual(
      unionRules([
        {
          operations: ['CREATE', '*'],
          apiGroups: ['apps', '*'],
          apiVersions: ['v1', '*'],
          resources: ['pods', '*', 'pods/status', 'deployments/*', 'deployments/scale', 'deployments', '*/status'],
        },
      ]),
      [
        {
          operations: ['*'],
          apiGroups: ['*'],
          apiVersions: ['*'],
          resources: ['*', 'deployments/*', '*/status'],
          scope: '*',
        },
      ],
    );
    assert.deepEqual(unionRules([rule(['CREATE'], [''], ['pods', '*/*', 'pods/log'])]), [
      rule(['CREATE'], [''], ['*/*']),
    ]);
  });

  it('matches exactly the requests at least one of the input rules matches', () => {
    const input = [
      rule(['CREATE', 'UPDATE'], ['*'], ['*']),
      rule(['CREATE'], ['', 'apps'], ['pods', 'deployments']),
      rule(['CREATE', 'UPDATE'], ['', 'apps', 'batch'], ['pods', 'pods/ephemeralcontainers']),
      rule(['DELETE'], [''], ['configmaps'], { scope: 'Namespaced' }),
      rule(['CONNECT'], [''], ['pods/exec', 'pods/*']),
    ];
    const output = unionRules(input);
    const requests = (['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const).flatMap((op) =>
      [
        ['', 'pods', ''],
        ['', 'pods', 'ephemeralcontainers'],
        ['', 'pods', 'exec'],
        ['', 'pods', 'status'],
        ['', 'configmaps', ''],
        ['apps', 'deployments', ''],
        ['apps', 'deployments', 'scale'],
        ['batch', 'jobs', ''],
        ['batch', 'jobs', 'ephemeralcontainers'],
      ].flatMap(([group, resource, sub]) => [
        request(op, group!, resource!, sub),
        request(op, group!, resource!, sub, ''),
      ]),
    );
    const differing = requests.filter((req) => matches(input, req) !== matches(output, req));
    assert.deepEqual(
      differing.map((r) => `${r.operation} ${r.resource.group}/${r.resource.resource}/${r.subResource ?? ''}`),
      [],
    );
    // ...and the union is not trivially everything.
    assert.equal(matches(output, request('DELETE', 'apps', 'deployments')), false);
  });
});

describe('resourceCovers()', () => {
  const cases: [string, string, boolean][] = [
    ['*', 'pods', true],
    ['*', 'pods/status', false],
    ['pods/*', 'pods', true],
    ['pods/*', 'pods/status', true],
    ['*/status', 'pods/status', true],
    ['*/status', 'pods', false],
    ['*/*', '*', true],
    ['pods', 'pods/status', false],
    ['pods', '*', false],
  ];
  for (const [outer, inner, expected] of cases) {
    it(`"${outer}" ${expected ? 'covers' : 'does not cover'} "${inner}"`, () => {
      assert.equal(resourceCovers(outer, inner), expected);
    });
  }
});
