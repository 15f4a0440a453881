import assert from 'node:assert/strict';
import {
  parseAuthorizationModes,
  withWebhook,
  type AuthorizationMode,
} from '../../../server/manifests/authorization-mode.js';
import { apiserverFlagReasons, apiserverFlags } from '../../../server/manifests/apiserver-flags.js';

describe('parseAuthorizationModes()', () => {
  it('reads the comma-separated list in its order', () => {
    assert.deepEqual(parseAuthorizationModes('Node,RBAC'), ['Node', 'RBAC']);
    assert.deepEqual(parseAuthorizationModes('ABAC, Webhook,AlwaysAllow'), ['ABAC', 'Webhook', 'AlwaysAllow']);
  });

  const refusals: [string, string][] = [
    [
      'Node,rbac',
      'unknown authorizer "rbac" (did you mean "RBAC"?); expected a comma-separated list of AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node, got "Node,rbac"',
    ],
    [
      'Node,,RBAC',
      'an empty authorizer name; expected a comma-separated list of AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node, got "Node,,RBAC"',
    ],
    ['Node,RBAC,Node', '"Node" is given twice, got "Node,RBAC,Node"'],
  ];
  for (const [value, message] of refusals) {
    it(`refuses "${value}"`, () => {
      assert.equal(parseAuthorizationModes(value), message);
    });
  }
});

describe('withWebhook()', () => {
  const cases: [AuthorizationMode[], AuthorizationMode[]][] = [
    [
      ['Node', 'RBAC'],
      ['Node', 'Webhook', 'RBAC'],
    ],
    [['RBAC'], ['Webhook', 'RBAC']],
    [
      ['Node', 'ABAC', 'RBAC'],
      ['Node', 'Webhook', 'ABAC', 'RBAC'],
    ],
    [['AlwaysAllow'], ['Webhook', 'AlwaysAllow']],
    [['Node'], ['Node', 'Webhook']],
    [[], ['Webhook']],
    // Already there, after RBAC (where it could forbid nothing RBAC allows): moved before it.
    [
      ['Node', 'RBAC', 'Webhook'],
      ['Node', 'Webhook', 'RBAC'],
    ],
    [
      ['Webhook', 'Node', 'RBAC'],
      ['Node', 'Webhook', 'RBAC'],
    ],
    // Node after another authorizer keeps its place: only what comes first is reordered.
    [
      ['RBAC', 'Node'],
      ['Webhook', 'RBAC', 'Node'],
    ],
  ];
  for (const [modes, expected] of cases) {
    it(`${modes.join(',') || '(none)'} → ${expected.join(',')}`, () => {
      assert.deepEqual(withWebhook(modes), expected);
    });
  }
});

describe('the kube-apiserver flags', () => {
  it('name the modes, the file on the control plane, v1 and both cache TTLs', () => {
    assert.deepEqual(apiserverFlags(['Node', 'Webhook', 'RBAC'], '/etc/kubernetes/gw/authz.kubeconfig'), [
      '--authorization-mode=Node,Webhook,RBAC',
      '--authorization-webhook-config-file=/etc/kubernetes/gw/authz.kubeconfig',
      '--authorization-webhook-version=v1',
      '--authorization-webhook-cache-authorized-ttl=5m',
      '--authorization-webhook-cache-unauthorized-ttl=30s',
    ]);
  });

  it('say why each has its value', () => {
    assert.deepEqual(apiserverFlagReasons(['Node', 'Webhook', 'RBAC'], false), [
      '  --authorization-mode: the first authorizer with an opinion decides. Webhook is placed before RBAC so the ' +
        'gateway can forbid what it would allow (the authorizers already there keep their order); the gateway only ' +
        'ever answers deny or no opinion, so everything it does not deny is decided as before.',
      '  --authorization-webhook-version=v1: the gateway reads v1 and v1beta1, but kube-apiserver sends v1beta1 ' +
        'unless told otherwise.',
      '  --authorization-webhook-cache-unauthorized-ttl=30s: every answer that is not "allowed" (the gateway\'s ' +
        'denials and its "no opinion") is cached this long per distinct request: a policy change reaches every ' +
        'apiserver within 30s, and a repeated request costs one call per 30s.',
      '  --authorization-webhook-cache-authorized-ttl=5m: the cache of "allowed" answers, which the gateway never ' +
        "gives (the apiserver's default; it has no effect).",
      '  A call that fails (gateway unreachable, TLS error, an answer it cannot read) is not cached and counts as no ' +
        'opinion: the next authorizers decide, nobody is locked out, and the gateway forbids nothing meanwhile.',
    ]);
  });

  it('name every authorizer after Webhook, and say when a Webhook was already configured', () => {
    const [mode] = apiserverFlagReasons(['Node', 'Webhook', 'ABAC', 'RBAC'], true);
    assert.equal(
      mode,
      '  --authorization-mode: the first authorizer with an opinion decides. Webhook is placed before ABAC, RBAC so ' +
        'the gateway can forbid what they would allow (the authorizers already there keep their order); the gateway ' +
        'only ever answers deny or no opinion, so everything it does not deny is decided as before. Webhook was ' +
        'already there: kube-apiserver calls a single authorization webhook, so this file replaces the one it calls now.',
    );
    assert.match(apiserverFlagReasons(['Node', 'Webhook'], false)[0] ?? '', /Webhook is placed last \(/);
  });
});
