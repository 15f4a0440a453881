import assert from 'node:assert/strict';
import type { KubeObject } from '../../../server/admission/types.js';
import { paramsOfBinding } from '../../../server/native-policy/binding-params.js';
import type { NativeBinding, NativePolicy, ParamRef } from '../../../server/native-policy/native-objects.js';

const configMap = (namespace: string, name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace, name, labels },
});

const limit = (name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Limit',
  metadata: { name, labels },
});

const OBJECTS: KubeObject[] = [
  configMap('platform', 'limits', { tier: 'gold' }),
  configMap('team-a', 'limits', { tier: 'gold' }),
  configMap('team-a', 'other', { tier: 'gold' }),
  configMap('team-b', 'other', { tier: 'silver' }),
  limit('small', { size: 's' }),
  limit('large', { size: 'l' }),
];

/** The names (namespace/name) of the params a binding with `ref` gives a request in each namespace, or the error. */
function paramsIn(kind: NativePolicy['paramKind'], ref: ParamRef, namespaces: string[]): string[] {
  const policy = { name: 'p', paramKind: kind } as NativePolicy;
  const binding = { name: 'b', policyName: 'p', validationActions: ['Deny'], paramRef: ref } as NativeBinding;
  const params = paramsOfBinding(policy, binding, OBJECTS);
  return namespaces.map((namespace) => {
    const found = params(namespace);
    if ('error' in found) return found.error;
    return found.params.map((o) => `${o?.metadata?.namespace ?? ''}/${o?.metadata?.name}`).join(' ');
  });
}

const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap' };
const LIMIT = { apiVersion: 'example.com/v1', kind: 'Limit' };

describe('paramsOfBinding(): the params a binding hands its policy', function () {
  it('takes a namespaced kind by name from the request’s namespace, or from the paramRef’s', function () {
    assert.deepEqual(paramsIn(CONFIG_MAP, { name: 'limits', parameterNotFoundAction: 'Allow' }, ['team-a', 'team-b']), [
      'team-a/limits',
      '',
    ]);
    assert.deepEqual(
      paramsIn(CONFIG_MAP, { name: 'limits', namespace: 'platform', parameterNotFoundAction: 'Deny' }, ['team-b', '']),
      ['platform/limits', 'platform/limits'],
    );
  });

  it('takes every object a selector selects, each a run of its own', function () {
    const ref: ParamRef = { selector: { matchLabels: { tier: 'gold' } }, parameterNotFoundAction: 'Deny' };
    assert.deepEqual(paramsIn(CONFIG_MAP, ref, ['team-a', 'team-b']), [
      'team-a/limits team-a/other',
      'no params found for policy binding with `Deny` parameterNotFoundAction',
    ]);
  });

  it('takes a cluster-scoped kind whatever the request’s namespace, and refuses a paramRef namespace for it', function () {
    const bySize: ParamRef = { selector: { matchLabels: { size: 'l' } }, parameterNotFoundAction: 'Allow' };
    assert.deepEqual(paramsIn(LIMIT, bySize, ['team-a', '']), ['/large', '/large']);
    assert.deepEqual(paramsIn(LIMIT, { name: 'small', namespace: 'x', parameterNotFoundAction: 'Allow' }, ['team-a']), [
      'paramRef.namespace must not be provided for a cluster-scoped `paramKind`',
    ]);
  });

  it('refuses a namespaced kind for a cluster-scoped request without a paramRef namespace', function () {
    assert.deepEqual(paramsIn(CONFIG_MAP, { name: 'limits', parameterNotFoundAction: 'Allow' }, ['']), [
      'cannot use namespaced paramRef in policy binding that matches cluster-scoped resources',
    ]);
  });
});
