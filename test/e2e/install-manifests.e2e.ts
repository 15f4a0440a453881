/**
 * manifests/ against the real kube-apiserver (v1.20), read from the files at test time: the CRD and the
 * Namespace are applied for real (the CRD must be Established; namespaced dry-runs need the Namespace),
 * every other document of the kustomization — and of the monitoring/ and examples/provider/ kustomizations
 * and the k8s-1.20/ and autoscaling/ components — goes through a server-side apply with dryRun=All; the
 * PolicyReport CRDs of policy-reports/ are applied for real, its RBAC with dryRun=All. Each
 * answer must echo the object with every field of the manifest (a pruned or dropped field fails), and nothing
 * dry-run may be stored (GET stays 404, or the resourceVersion stays the same for an object another file
 * created).
 * A document the apiserver refuses fails the test with the apiserver's message.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import {
  describeDocument,
  isRecord,
  kustomizationDocuments,
  objectId,
  readDocuments,
  readKustomization,
  type ManifestDocument,
  type Wire,
} from '../helpers/manifest-files.js';
import { kubeAtLeast, kubeVersion, skipBecause } from './cluster.js';
import {
  ApplyRefused,
  apiserverRequest,
  applyCrd,
  deleteCrd,
  differences,
  objectPath,
  servedResource,
  serverSideApply,
  type ServedResource,
} from './server-side-apply.js';

const FIELD_MANAGER = 'admission-gateway-e2e';
/** Stands in for prometheus-operator's CRD, which this cluster does not have (see the fixture's header). */
const STAND_IN_SERVICEMONITOR_CRD = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  'fixtures',
  'servicemonitor-crd.yaml',
);

function nameOf(object: Wire): string {
  return String((object.metadata as Wire).name);
}

/** The resource serving a document's kind; fails naming the document when the apiserver does not serve it. */
async function resourceOf(doc: ManifestDocument): Promise<ServedResource> {
  const resource = await servedResource(String(doc.object.apiVersion), String(doc.object.kind));
  if (!resource) throw new Error(`${describeDocument(doc)}: the apiserver does not serve ${objectId(doc.object)}`);
  return resource;
}

/** The stored object's resourceVersion, or undefined when GET answers 404. */
async function storedVersion(objectUrl: string): Promise<string | undefined> {
  const read = await apiserverRequest('GET', objectUrl);
  if (read.status === 404) return undefined;
  const version = (read.body as { metadata?: { resourceVersion?: string } } | undefined)?.metadata?.resourceVersion;
  if (read.status !== 200 || !version) throw new Error(`GET ${objectUrl} answered HTTP ${read.status}: ${read.text}`);
  return version;
}

/**
 * Dry-run applies each document; returns what went wrong per document (refusals with the apiserver's
 * message, echoes that differ from the manifest, anything stored) — empty when all went through.
 */
async function dryRunAll(docs: readonly ManifestDocument[], resources: readonly ServedResource[]): Promise<string[]> {
  const problems: string[] = [];
  for (const [i, doc] of docs.entries()) {
    const resource = resources[i]!;
    const what = describeDocument(doc);
    // Another file of the suite may have created the same object for real: then the dry run must leave
    // it exactly as it was (same resourceVersion) instead of absent.
    const before = await storedVersion(objectPath(doc.object, resource));
    let answer: Wire;
    try {
      answer = await serverSideApply(doc.object, resource, { dryRun: true, fieldManager: FIELD_MANAGER });
    } catch (err) {
      if (err instanceof ApplyRefused) {
        problems.push(`${what}: ${err.message}`);
        continue;
      }
      throw err;
    }
    const echoed = [answer.apiVersion, answer.kind, (answer.metadata as Wire | undefined)?.name];
    if (JSON.stringify(echoed) !== JSON.stringify([doc.object.apiVersion, doc.object.kind, nameOf(doc.object)])) {
      problems.push(`${what}: the answer is ${JSON.stringify(echoed)}`);
    }
    problems.push(...differences(doc.object, answer).map((d) => `${what}: answer differs at ${d}`));
    const after = await storedVersion(objectPath(doc.object, resource));
    if (after !== before)
      problems.push(`${what}: stored by the dry run (${before ?? 'absent'} → ${after ?? 'absent'})`);
  }
  return problems;
}

describe('manifests/ on the real kube-apiserver (server-side apply)', function () {
  this.timeout(180_000);
  let base: ManifestDocument[];
  let crds: ManifestDocument[];
  let namespace: ManifestDocument;
  let standIn: Wire | undefined;

  before(async function () {
    base = await kustomizationDocuments('');
    const find = (kind: string) => {
      const found = base.filter((d) => d.object.kind === kind);
      assert.equal(found.length, 1, `manifests/ has exactly one ${kind}`);
      return found[0]!;
    };
    crds = base.filter((d) => d.object.kind === 'CustomResourceDefinition');
    namespace = find('Namespace');
  });

  after(async function () {
    // The Namespace stays: without a controller-manager a deleted namespace is Terminating for good, and a
    // later file could not use it. CRDs go (admission-provider.e2e.ts needs to start without its CRD).
    if (standIn) await deleteCrd(nameOf(standIn));
    for (const crd of crds ?? []) await deleteCrd(nameOf(crd.object));
  });

  it('creates the CRDs for real: Established, AdmissionProviders and ClusterAdmissionExceptions cluster-scoped, AdmissionExceptions namespaced', async function () {
    const served = [];
    for (const crd of crds) served.push(await applyCrd(crd.object, FIELD_MANAGER));
    const groupVersionPath = '/apis/admissiongateway.io/v1alpha1';
    assert.deepEqual(
      served.sort((a, b) => a.plural.localeCompare(b.plural)),
      [
        { groupVersionPath, plural: 'admissionexceptions', namespaced: true },
        { groupVersionPath, plural: 'admissionproviders', namespaced: false },
        { groupVersionPath, plural: 'clusteradmissionexceptions', namespaced: false },
      ],
    );
  });

  it('creates the gateway Namespace for real', async function () {
    const resource = await resourceOf(namespace);
    const stored = await serverSideApply(namespace.object, resource, { dryRun: false, fieldManager: FIELD_MANAGER });
    assert.deepEqual(differences(namespace.object, stored), []);
    const read = await apiserverRequest('GET', objectPath(namespace.object, resource));
    assert.equal(read.status, 200);
    const phase = (read.body as { status?: { phase?: string } }).status?.phase;
    assert.equal(phase, 'Active', `namespace ${nameOf(namespace.object)} is ${phase} (an earlier run deleted it?)`);
  });

  it('reports a refused document with the apiserver message (the check below can fail)', async function () {
    const deployment = base.find((d) => d.object.kind === 'Deployment')!;
    const broken = structuredClone(deployment.object);
    (broken.spec as Wire).replicas = -1;
    await assert.rejects(
      serverSideApply(broken, await resourceOf(deployment), { dryRun: true, fieldManager: FIELD_MANAGER }),
      (err: unknown) => {
        assert.ok(err instanceof ApplyRefused, String(err));
        assert.equal(err.status, 422, err.message);
        assert.match(err.apiserverMessage, /spec\.replicas: Invalid value: -1: must be greater than or equal to 0/);
        return true;
      },
    );
  });

  it('accepts every other document of manifests/ with dryRun=All, echoing each and storing none', async function () {
    const component = await readKustomization('k8s-1.20');
    const replacedOn120 = new Set(
      (await Promise.all(component.patches.map((p) => readDocuments(path.join('k8s-1.20', p)))))
        .flat()
        .map((d) => objectId(d.object)),
    );
    // Before 1.30 the webhooks are applied through a component that removes their matchConditions
    // (install-kubectl.e2e.ts applies it with kubectl): the base's own are not for this apiserver.
    const webhooksNeedComponent = !kubeAtLeast(30);
    const rest = base.filter(
      (d) =>
        !crds.includes(d) &&
        d !== namespace &&
        !(webhooksNeedComponent && String(d.object.kind).endsWith('WebhookConfiguration')),
    );
    assert.ok(rest.length >= (webhooksNeedComponent ? 6 : 8), `${rest.length} documents`);
    const toApply: ManifestDocument[] = [];
    const resources: ServedResource[] = [];
    const unserved: string[] = [];
    for (const doc of rest) {
      const resource = await servedResource(String(doc.object.apiVersion), String(doc.object.kind));
      if (resource) {
        toApply.push(doc);
        resources.push(resource);
      } else {
        unserved.push(objectId(doc.object));
      }
    }
    // Only what the k8s-1.20 component replaces may be missing (policy/v1 PodDisruptionBudget on 1.20;
    // the next test applies its replacement). On a newer apiserver nothing is skipped.
    assert.deepEqual(
      unserved.filter((id) => !replacedOn120.has(id)),
      [],
      'kinds this apiserver does not serve',
    );
    assert.ok(toApply.length >= (webhooksNeedComponent ? 5 : 7), `${toApply.length} documents applied`);
    const problems = await dryRunAll(toApply, resources);
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('accepts the k8s-1.20 component: a policy/v1beta1 PodDisruptionBudget where policy/v1 is not served', async function () {
    const policyV1 = await apiserverRequest('GET', '/apis/policy/v1');
    const docs = await kustomizationDocuments('k8s-1.20');
    assert.deepEqual(
      docs.map((d) => objectId(d.object)),
      ['policy/v1beta1 PodDisruptionBudget admission-gateway/admission-gateway'],
    );
    if (policyV1.status !== 404) {
      // A newer e2e apiserver: manifests/pdb.yaml was applied above; the component matters only to ≤1.20.
      if (!(await servedResource('policy/v1beta1', 'PodDisruptionBudget'))) {
        skipBecause(
          this,
          `policy/v1beta1 is not served since Kubernetes 1.25; this apiserver is ${kubeVersion().join('.')}`,
        );
      }
    }
    const problems = await dryRunAll(docs, await Promise.all(docs.map(resourceOf)));
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('accepts the autoscaling component’s HorizontalPodAutoscaler (as autoscaling/v2beta2, the same schema, where v2 is not served)', async function () {
    const docs = await kustomizationDocuments('autoscaling');
    assert.deepEqual(
      docs.map((d) => objectId(d.object)),
      ['autoscaling/v2 HorizontalPodAutoscaler admission-gateway/admission-gateway'],
    );
    // autoscaling/v2 is served from Kubernetes 1.23; v2beta2 (1.12–1.25) has exactly its fields.
    const v2 = await servedResource('autoscaling/v2', 'HorizontalPodAutoscaler');
    const asServed = v2
      ? docs
      : docs.map((d) => ({ ...d, object: { ...d.object, apiVersion: 'autoscaling/v2beta2' } }));
    const problems = await dryRunAll(asServed, await Promise.all(asServed.map(resourceOf)));
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('accepts manifests/examples/provider/ (a provider Deployment, its Service, ServiceAccount and RBAC) with dryRun=All', async function () {
    const docs = await kustomizationDocuments('examples/provider');
    assert.deepEqual(docs.map((d) => objectId(d.object)).sort(), [
      'apps/v1 Deployment admission-gateway/default-labels-provider',
      'rbac.authorization.k8s.io/v1 ClusterRole /default-labels-provider',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding /default-labels-provider',
      'v1 Service admission-gateway/default-labels-provider',
      'v1 ServiceAccount admission-gateway/default-labels-provider',
    ]);
    const problems = await dryRunAll(docs, await Promise.all(docs.map(resourceOf)));
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('creates the PolicyReport CRDs of manifests/policy-reports/ for real, and accepts its RBAC with dryRun=All', async function () {
    const docs = await kustomizationDocuments('policy-reports');
    assert.deepEqual(docs.map((d) => objectId(d.object)).sort(), [
      'apiextensions.k8s.io/v1 CustomResourceDefinition /clusterpolicyreports.wgpolicyk8s.io',
      'apiextensions.k8s.io/v1 CustomResourceDefinition /policyreports.wgpolicyk8s.io',
      'rbac.authorization.k8s.io/v1 ClusterRole /admission-gateway-policy-reports',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding /admission-gateway-policy-reports',
    ]);
    const crds = docs.filter((d) => d.object.kind === 'CustomResourceDefinition');
    const served = [];
    // Kept afterwards, as Kyverno or Kubewarden would leave them: audit.e2e.ts uses them too.
    for (const crd of crds) served.push(await applyCrd(crd.object, FIELD_MANAGER));
    assert.deepEqual(served, [
      { groupVersionPath: '/apis/wgpolicyk8s.io/v1alpha1', plural: 'policyreports', namespaced: true },
      { groupVersionPath: '/apis/wgpolicyk8s.io/v1alpha1', plural: 'clusterpolicyreports', namespaced: false },
    ]);
    assert.ok(await servedResource('wgpolicyk8s.io/v1alpha2', 'PolicyReport'), 'v1alpha2, what the audit writes');
    const rbac = docs.filter((d) => d.object.kind !== 'CustomResourceDefinition');
    const problems = await dryRunAll(rbac, await Promise.all(rbac.map(resourceOf)));
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('accepts manifests/monitoring/ once a ServiceMonitor CRD exists (a stand-in for prometheus-operator’s)', async function () {
    const docs = await kustomizationDocuments('monitoring');
    assert.deepEqual(
      docs.map((d) => objectId(d.object)),
      ['monitoring.coreos.com/v1 ServiceMonitor admission-gateway/admission-gateway'],
    );
    assert.equal(await servedResource('monitoring.coreos.com/v1', 'ServiceMonitor'), undefined, 'not installed yet');
    const fixture = parse(await readFile(STAND_IN_SERVICEMONITOR_CRD, 'utf8')) as unknown;
    assert.ok(isRecord(fixture));
    standIn = fixture;
    const served = await applyCrd(fixture, FIELD_MANAGER);
    assert.equal(served.namespaced, true);
    const problems = await dryRunAll(docs, [served]);
    assert.deepEqual(problems, [], problems.join('\n'));
  });
});
