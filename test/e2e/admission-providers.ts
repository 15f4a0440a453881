/**
 * AdmissionProvider resources on the e2e apiserver, as an operator writes them (client-node's CustomObjectsApi
 * as the suite's admin): create, read, patch and delete by name.
 */
import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  PROVIDER_GROUP,
  PROVIDER_PLURAL,
  PROVIDER_VERSION,
  type AdmissionProvider,
} from '../../server/kube/admission-provider.js';
import { kubeConfig, readStatus } from './cluster.js';

const GROUP = { group: PROVIDER_GROUP, version: PROVIDER_VERSION, plural: PROVIDER_PLURAL };

const customObjects = () => kubeConfig().makeApiClient(CustomObjectsApi);

export async function createProvider(name: string, spec: Record<string, unknown>): Promise<void> {
  const body = {
    apiVersion: `${PROVIDER_GROUP}/${PROVIDER_VERSION}`,
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

/** Deletes the provider; one that is already gone is fine. */
export async function deleteProvider(name: string): Promise<void> {
  await customObjects()
    .deleteClusterCustomObject({ ...GROUP, name })
    .catch((err: unknown) => {
      if (!(err instanceof ApiException && err.code === 404)) throw err;
    });
}
