import assert from 'node:assert/strict';
import { deploymentCreate, edited, requestOf } from '../../fixtures/reviews/index.js';
import { compileMatchResources, EXCLUDED } from '../../../server/native-policy/match-resources.js';
import type { MatchResources } from '../../../server/native-policy/native-objects.js';
import { RULES_DO_NOT_MATCH } from '../../../server/steps/match.js';

const DEPLOYMENTS = {
  operations: ['CREATE' as const],
  apiGroups: ['apps'],
  apiVersions: ['v1'],
  resources: ['deployments'],
};

const match = (fields: Partial<MatchResources>): MatchResources => ({
  resourceRules: [],
  excludeResourceRules: [],
  namespaceSelector: {},
  objectSelector: {},
  matchPolicy: 'Equivalent',
  ...fields,
});

/** Deployment team-a/checkout as the apiserver converted it from extensions/v1beta1 for the webhook. */
const converted = () =>
  requestOf(
    edited(deploymentCreate(), {
      'request.requestResource': { group: 'extensions', version: 'v1beta1', resource: 'deployments' },
    }),
  );

describe('compileMatchResources(): a policy’s matchConstraints and a binding’s matchResources', function () {
  it('selects every resource without resourceRules, and none excluded by excludeResourceRules', function () {
    const request = requestOf(deploymentCreate());
    assert.equal(compileMatchResources(match({})).matches(request, undefined), undefined);
    assert.equal(
      compileMatchResources(match({ excludeResourceRules: [DEPLOYMENTS] })).matches(request, undefined),
      EXCLUDED,
    );
  });

  it('limits a rule with resourceNames to those names', function () {
    const request = requestOf(deploymentCreate());
    const named = (names: string[]) =>
      compileMatchResources(match({ resourceRules: [{ ...DEPLOYMENTS, resourceNames: names }] }));
    assert.equal(named(['checkout']).matches(request, undefined), undefined);
    assert.equal(named(['billing']).matches(request, undefined), RULES_DO_NOT_MATCH);
  });

  it('matches the resource as requested, and with matchPolicy Equivalent the one it was converted to', function () {
    const request = converted();
    const rules = (matchPolicy: 'Exact' | 'Equivalent') =>
      compileMatchResources(match({ resourceRules: [DEPLOYMENTS], matchPolicy }));
    assert.equal(rules('Equivalent').matches(request, undefined), undefined);
    assert.equal(rules('Exact').matches(request, undefined), RULES_DO_NOT_MATCH);
    // The decision trace names the rule that selected it.
    assert.equal(rules('Equivalent').ruleIndex(request), 0);
    assert.equal(rules('Exact').ruleIndex(request), -1);
  });

  it('reads the namespace’s labels for a namespaceSelector', function () {
    const request = requestOf(deploymentCreate());
    const byEnv = compileMatchResources(match({ namespaceSelector: { matchLabels: { env: 'prod' } } }));
    assert.equal(byEnv.needsNamespaceLabels, true);
    assert.equal(byEnv.matches(request, { env: 'prod' }), undefined);
    assert.notEqual(byEnv.matches(request, { env: 'dev' }), undefined);
  });
});
