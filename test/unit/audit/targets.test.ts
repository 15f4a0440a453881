/**
 * Which resources an audit lists for the steps' rules, from discovery documents: `*` in every field, versions
 * (one per group and resource, the preferred one first), subresources, the list verb, scope, and rules that
 * never see a CREATE.
 */
import assert from 'node:assert/strict';
import type { RuleWithOperations } from '../../../server/admission/types.js';
import {
  auditTargets,
  groupVersionsToRead,
  type DiscoveredGroup,
  type DiscoveredResource,
  type StepRules,
} from '../../../server/audit/targets.js';

const GROUPS: DiscoveredGroup[] = [
  { name: '', preferredVersion: 'v1', versions: ['v1'] },
  { name: 'apps', preferredVersion: 'v1', versions: ['v1'] },
  { name: 'example.com', preferredVersion: 'v2', versions: ['v2', 'v1'] },
];

const RESOURCES: Readonly<Record<string, readonly DiscoveredResource[]>> = {
  '/v1': [
    { name: 'pods', kind: 'Pod', namespaced: true, verbs: ['create', 'get', 'list', 'watch'] },
    { name: 'pods/status', kind: 'Pod', namespaced: true, verbs: ['get', 'patch'] },
    { name: 'pods/exec', kind: 'PodExecOptions', namespaced: true, verbs: ['create', 'get'] },
    { name: 'bindings', kind: 'Binding', namespaced: true, verbs: ['create'] },
    { name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['get', 'list'] },
    { name: 'nodes', kind: 'Node', namespaced: false, verbs: ['get', 'list'] },
  ],
  'apps/v1': [{ name: 'deployments', kind: 'Deployment', namespaced: true, verbs: ['get', 'list'] }],
  'example.com/v2': [{ name: 'widgets', kind: 'Widget', namespaced: true, verbs: ['get', 'list'] }],
  'example.com/v1': [
    { name: 'widgets', kind: 'Widget', namespaced: true, verbs: ['get', 'list'] },
    { name: 'gadgets', kind: 'Gadget', namespaced: false, verbs: ['get', 'list'] },
  ],
};

const rule = (over: Partial<RuleWithOperations>): RuleWithOperations => ({
  operations: ['CREATE'],
  apiGroups: ['*'],
  apiVersions: ['*'],
  resources: ['*'],
  ...over,
});

const targetsOf = (steps: StepRules[]) =>
  auditTargets(steps, GROUPS, (group, version) => RESOURCES[`${group}/${version}`]).map(
    (t) =>
      `${t.resource}${t.group ? `.${t.group}` : ''}/${t.version} ${t.kind} ${t.namespaced ? 'ns' : 'cluster'} [${t.steps.join(' ')}]`,
  );

describe('audit targets', function () {
  it('lists every listable resource for `*`, once, in the preferred version, never a subresource', function () {
    assert.deepEqual(targetsOf([{ step: 'all', rules: [rule({})] }]), [
      'namespaces/v1 Namespace cluster [all]',
      'nodes/v1 Node cluster [all]',
      'pods/v1 Pod ns [all]',
      'deployments.apps/v1 Deployment ns [all]',
      'gadgets.example.com/v1 Gadget cluster [all]',
      'widgets.example.com/v2 Widget ns [all]',
    ]);
  });

  it('takes the version a rule names, and names every step whose rules select a resource', function () {
    assert.deepEqual(
      targetsOf([
        {
          step: 'old-widgets',
          rules: [rule({ apiGroups: ['example.com'], apiVersions: ['v1'], resources: ['widgets'] })],
        },
        { step: 'pods', rules: [rule({ apiGroups: [''], resources: ['pods', 'pods/status'] })] },
        { step: 'pods-too', rules: [rule({ apiGroups: ['', 'apps'], resources: ['*/*'] })] },
      ]),
      [
        'namespaces/v1 Namespace cluster [pods-too]',
        'nodes/v1 Node cluster [pods-too]',
        'pods/v1 Pod ns [pods pods-too]',
        'deployments.apps/v1 Deployment ns [pods-too]',
        'widgets.example.com/v1 Widget ns [old-widgets]',
      ],
    );
  });

  it('lists nothing for subresource-only rules, rules without CREATE, and resources without list', function () {
    assert.deepEqual(
      targetsOf([
        { step: 'status', rules: [rule({ resources: ['pods/status', '*/exec'] })] },
        { step: 'updates', rules: [rule({ operations: ['UPDATE', 'DELETE'] })] },
        { step: 'bindings', rules: [rule({ operations: ['*'], apiGroups: [''], resources: ['bindings'] })] },
      ]),
      [],
    );
  });

  it('honours scope: Namespaced lists namespaced resources, Cluster the cluster-scoped ones', function () {
    assert.deepEqual(targetsOf([{ step: 'ns', rules: [rule({ apiGroups: [''], scope: 'Namespaced' })] }]), [
      'pods/v1 Pod ns [ns]',
    ]);
    assert.deepEqual(targetsOf([{ step: 'cl', rules: [rule({ scope: 'Cluster' })] }]), [
      'namespaces/v1 Namespace cluster [cl]',
      'nodes/v1 Node cluster [cl]',
      'gadgets.example.com/v1 Gadget cluster [cl]',
    ]);
  });

  it('reads the resources of only the group-versions some CREATE rule takes', function () {
    assert.deepEqual(
      groupVersionsToRead(
        [
          { step: 'a', rules: [rule({ apiGroups: ['example.com'], apiVersions: ['v1'] })] },
          { step: 'b', rules: [rule({ apiGroups: ['apps'], operations: ['UPDATE'] })] },
          { step: 'c', rules: [rule({ apiGroups: [''] })] },
        ],
        GROUPS,
      ),
      [
        { group: '', version: 'v1' },
        { group: 'example.com', version: 'v1' },
      ],
    );
  });
});
