/**
 * AdmissionProvider resources and their CRD in the e2e cluster, as an operator writes them (client-node's
 * CustomObjectsApi as the suite's admin): the clients and names, create, read, patch, and deletes that do not
 * mind what is already gone.
 */
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import {
  PROVIDER_RESOURCE,
  PROVIDER_API_VERSION,
  PROVIDER_GROUP,
  PROVIDER_PLURAL,
  type AdmissionProvider,
} from '../../server/kube/admission-provider.js';
import type { FakeProvider } from '../helpers/fake-provider.js';
import { errorMessage } from '../../server/base/errors.js';
import { eventually, kubeConfig, readStatus } from './cluster.js';
import { manifestDocuments, toModel } from './manifests.js';

export const CRD_NAME = `${PROVIDER_PLURAL}.${PROVIDER_GROUP}`;
/** What CustomObjectsApi calls take to name the resource. */
export const GROUP = PROVIDER_RESOURCE;

export const apiextensions = (): ApiextensionsV1Api => kubeConfig().makeApiClient(ApiextensionsV1Api);
export const customObjects = (): CustomObjectsApi => kubeConfig().makeApiClient(CustomObjectsApi);

/**
 * The spec of a mutating provider at the fake's /<name>/patch (the label provider=patched) at `order`: 5 s,
 * failurePolicy Fail. The caller adds its `match` and anything else.
 */
export function patchingProviderSpec(fake: FakeProvider, name: string, order: number): Record<string, unknown> {
  return {
    url: fake.url(`/${name}/patch`),
    caBundle: fake.caBundle,
    phases: ['mutate'],
    order,
    timeoutSeconds: 5,
    failurePolicy: 'Fail',
  };
}

export async function createProvider(name: string, spec: Record<string, unknown>): Promise<void> {
  const body = {
    apiVersion: PROVIDER_API_VERSION,
    kind: 'AdmissionProvider',
    metadata: { name },
    spec,
  };
  await customObjects().createClusterCustomObject({ ...GROUP, body });
}

export async function readProvider(name: string): Promise<AdmissionProvider> {
  return (await customObjects().getClusterCustomObject({ ...GROUP, name })) as AdmissionProvider;
}

/** Whether the provider is gone (a read answers 404). */
export async function providerGone(name: string): Promise<boolean> {
  return (await readStatus(() => readProvider(name))) === 404;
}

/** A JSON merge patch (`{ spec: {…} }`, `{ metadata: { annotations: {…} } }`); lists in it replace the stored ones. */
export async function mergePatchProvider(name: string, body: object): Promise<void> {
  await customObjects().patchClusterCustomObject(
    { ...GROUP, name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** A JSON patch (RFC 6902): how another controller adds or removes its own finalizer, touching nothing else. */
export async function jsonPatchProvider(name: string, operations: object[]): Promise<void> {
  await customObjects().patchClusterCustomObject(
    { ...GROUP, name, body: operations },
    setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
  );
}

const ignoreNotFound = (err: unknown): void => {
  if (!(err instanceof ApiException && err.code === 404)) throw err;
};

/** Deletes the provider; one that is already gone is fine. */
export async function deleteProvider(name: string): Promise<void> {
  await customObjects()
    .deleteClusterCustomObject({ ...GROUP, name })
    .catch(ignoreNotFound);
}

/**
 * Deletes the CRD, and with it every AdmissionProvider, and waits until it is gone: a suite that leaves it
 * Terminating fails here, not the next suite that needs it.
 */
export async function deleteProviderCrd(): Promise<void> {
  await apiextensions().deleteCustomResourceDefinition({ name: CRD_NAME }).catch(ignoreNotFound);
  await waitOutCrdDeletion('the deleted AdmissionProvider CRD to be gone');
}

/** The CRD as served, or undefined when there is none. */
async function readCrd(): Promise<V1CustomResourceDefinition | undefined> {
  try {
    return await apiextensions().readCustomResourceDefinition({ name: CRD_NAME });
  } catch (err) {
    ignoreNotFound(err);
    return undefined;
  }
}

/** Waits until no CRD of that name is being deleted (it is gone, or made again); on timeout, says what holds it. */
async function waitOutCrdDeletion(what: string): Promise<void> {
  await eventually(what, async () => ((await readCrd())?.metadata?.deletionTimestamp ? undefined : true)).catch(
    async (err: unknown) => {
      // Seen once on 1.37 after a suite that restarts the apiserver: say what holds the deletion.
      throw new Error(`${errorMessage(err)}; ${await terminatingState()}`, { cause: err });
    },
  );
}

/** A Terminating CRD's conditions and finalizers, and the AdmissionProviders left with theirs. */
async function terminatingState(): Promise<string> {
  const said: string[] = [];
  try {
    const crd = await apiextensions().readCustomResourceDefinition({ name: CRD_NAME });
    const conditions = (crd.status?.conditions ?? []).map(
      (c) => `${c.type}=${c.status} ${c.reason ?? ''}: ${c.message ?? ''}`,
    );
    said.push(
      `the CRD's finalizers ${JSON.stringify(crd.metadata?.finalizers ?? [])}, conditions ${JSON.stringify(conditions)}`,
    );
  } catch (err) {
    said.push(`the CRD could not be read (${errorMessage(err)})`);
  }
  try {
    const list = (await customObjects().listClusterCustomObject(GROUP)) as {
      items?: { metadata?: { name?: string; finalizers?: string[]; deletionTimestamp?: unknown } }[];
    };
    const left = (list.items ?? []).map(
      ({ metadata: m }) =>
        `${m?.name} (finalizers ${JSON.stringify(m?.finalizers ?? [])}${m?.deletionTimestamp ? ', Terminating' : ''})`,
    );
    said.push(`AdmissionProviders left: ${left.length > 0 ? left.join(', ') : 'none'}`);
  } catch (err) {
    said.push(`AdmissionProviders could not be listed (${errorMessage(err)})`);
  }
  return said.join('; ');
}

/**
 * The CRD as the manifests install it, served: created unless an earlier file left it (one an earlier file is
 * deleting is waited out first), then until AdmissionProviders can be listed. Whether it was created here.
 */
export async function ensureCrd(): Promise<boolean> {
  await waitOutCrdDeletion('an AdmissionProvider CRD being deleted to be gone');
  const created = (await readCrd()) === undefined;
  if (created) {
    const [crd] = (await manifestDocuments('crd-admissionprovider.yaml')) as [Record<string, unknown>];
    await apiextensions().createCustomResourceDefinition({
      body: toModel<V1CustomResourceDefinition>(crd, 'V1CustomResourceDefinition'),
    });
  }
  await eventually('AdmissionProviders to be served', async () =>
    (await readStatus(() => customObjects().listClusterCustomObject(GROUP))) === 200 ? true : undefined,
  );
  return created;
}
