import assert from 'node:assert/strict';
import { namespaceForPolicies } from '../../../server/admission/namespace-object.js';
import type { AdmissionRequest, AdmissionResponse, KubeObject } from '../../../server/admission/types.js';
import type { NamespaceLabelSource } from '../../../server/dispatch/reviewer.js';
import { chainAnswer } from '../../helpers/chain-answer.js';
import { edited, namespaceCreate, podCreate, requestOf } from '../../fixtures/reviews/index.js';

/** A namespace as the client's informer holds one: a Date, fields the apiserver does not hand to policies. */
const TEAM_A = {
  metadata: {
    name: 'team-a',
    uid: '5f0c',
    resourceVersion: '42',
    creationTimestamp: new Date('2026-11-01T10:00:00.000Z'),
    labels: { 'kubernetes.io/metadata.name': 'team-a', tier: 'restricted' },
    annotations: { 'acme.io/owner': 'payments' },
    managedFields: [{ manager: 'kubectl', operation: 'Apply' }],
    ownerReferences: [{ kind: 'Thing', name: 'x' }],
    deletionTimestamp: undefined,
  },
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Active' },
};

/** A cluster's source: the namespaces it holds, and the names asked for. */
function clusterSource(): NamespaceLabelSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    labels: (name) => (name === 'team-a' ? TEAM_A.metadata.labels : undefined),
    object(name) {
      asked.push(name);
      // A namespace not cached yet is read: the answer comes later.
      return Promise.resolve(name === 'team-a' ? namespaceForPolicies(TEAM_A) : undefined);
    },
  };
}

/** The validate route's answer to `request` with the chain written in `chain` (YAML entries). */
const validate = (
  chain: string,
  request: AdmissionRequest,
  source?: NamespaceLabelSource,
): Promise<AdmissionResponse> => chainAnswer(chain, request, 'validate', source);

/** A policy entry for Pods and Namespaces whose one validation's message is `message`, always refusing. */
const tellingPolicy = (message: string): string => `
  - policy: tell
    match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods, namespaces] }] }
    validations:
      - expression: 'false'
        messageExpression: ${JSON.stringify(message)}
`;

/** What a policy sees of the namespace: its fields, and the values of some. */
const DESCRIBED = [
  "'keys ' + namespaceObject.map(k, k).join(',')",
  "'metadata ' + namespaceObject.metadata.map(k, k).join(',')",
  "'created ' + namespaceObject.metadata.creationTimestamp",
  "'tier ' + namespaceObject.metadata.labels.tier",
  "'owner ' + namespaceObject.metadata.annotations['acme.io/owner']",
  "'finalizers ' + namespaceObject.spec.finalizers.join(',')",
  "'phase ' + namespaceObject.status.phase",
].join(" + '; ' + ");

const refusal = (response: AdmissionResponse): string | undefined => response.status?.message;

describe('namespaceObject', () => {
  it('reads the namespace from the cluster as the apiserver hands it: no managedFields or ownerReferences, times as strings', async () => {
    const response = await validate(tellingPolicy(DESCRIBED), requestOf(podCreate()), clusterSource());
    assert.equal(
      refusal(response),
      'tell: keys metadata,spec,status; metadata name,uid,resourceVersion,creationTimestamp,labels,annotations; ' +
        'created 2026-11-01T10:00:00Z; tier restricted; owner payments; finalizers kubernetes; phase Active',
    );
  });

  it('is looked up only when an expression of the chain reads it, a matchCondition included', async () => {
    const source = clusterSource();
    await validate(tellingPolicy("'no namespace read'"), requestOf(podCreate()), source);
    assert.deepEqual(source.asked, []);
    const conditioned = `
  - policy: restricted-only
    match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }] }
    matchConditions:
      - name: restricted
        expression: "namespaceObject.metadata.labels.tier == 'restricted'"
    validations:
      - expression: 'false'
        messageExpression: "'owned by ' + namespaceObject.metadata.annotations['acme.io/owner']"
`;
    const response = await validate(conditioned, requestOf(podCreate()), source);
    assert.deepEqual(source.asked, ['team-a']);
    assert.equal(refusal(response), 'restricted-only: owned by payments');
  });

  it('is null for a Namespace itself and for a cluster-scoped object, and for a namespace that cannot be read', async () => {
    const source = clusterSource();
    const namespace = requestOf(namespaceCreate());
    // The apiserver names a Namespace's own name as its request's namespace: still null.
    assert.equal(
      refusal(
        await validate(tellingPolicy('string(namespaceObject == null)'), { ...namespace, namespace: 'team-b' }, source),
      ),
      'tell: true',
    );
    const elsewhere = requestOf(edited(podCreate(), { 'request.namespace': 'gone' }));
    assert.equal(
      refusal(await validate(tellingPolicy('string(namespaceObject == null)'), elsewhere, source)),
      'tell: true',
    );
    assert.deepEqual(source.asked, ['gone']);
  });

  it('is made of the name and labels where there is no cluster (standalone, policy tests)', async () => {
    const response = await validate(
      tellingPolicy(
        "namespaceObject.map(k, k).join(',') + '; ' + namespaceObject.metadata.map(k, k).join(',') + '; ' + namespaceObject.metadata.labels.map(k, k + '=' + namespaceObject.metadata.labels[k]).join(',')",
      ),
      requestOf(podCreate()),
    );
    assert.equal(refusal(response), 'tell: metadata; name,labels; kubernetes.io/metadata.name=team-a');
  });

  it('keeps a namespace from the wire as it is, and the times of the client as the apiserver writes them', () => {
    const wire = { metadata: { name: 'x', creationTimestamp: '2026-11-01T10:00:00Z' }, status: { phase: 'Active' } };
    assert.deepEqual(namespaceForPolicies(wire), wire);
    const fromClient: KubeObject = namespaceForPolicies(TEAM_A);
    assert.equal(fromClient.metadata?.creationTimestamp, '2026-11-01T10:00:00Z');
    assert.equal('managedFields' in fromClient.metadata, false);
  });
});
