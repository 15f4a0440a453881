/**
 * Server-side apply of plain wire-form manifests against the e2e apiserver, the way `kubectl apply
 * --server-side` does it: the REST path comes from discovery (so a kind the apiserver does not serve is
 * reported as such), then PATCH with `application/apply-patch+yaml`, a field manager and `force`. Raw
 * HTTPS with the kubeconfig's credentials: the typed clients would re-serialize the object through their
 * models and silently drop what they do not know.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import { stringify } from 'yaml';
import { isRecord, type Wire } from '../helpers/manifest-files.js';
import { eventually, kubeConfig } from './cluster.js';

export interface ApiAnswer {
  readonly status: number;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: unknown;
  /** The response's headers (node joins repeated ones, `Warning` among them, with ", "). */
  readonly headers: Readonly<Record<string, string>>;
}

/** One request to the e2e apiserver with the kubeconfig's CA and credentials. */
export async function apiserverRequest(
  method: string,
  apiPath: string,
  options: { body?: string; contentType?: string } = {},
): Promise<ApiAnswer> {
  const kc = kubeConfig();
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig has no current cluster');
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.contentType) headers['content-type'] = options.contentType;
  const request: https.RequestOptions = { method, headers };
  await kc.applyToHTTPSOptions(request);
  try {
    return await new Promise<ApiAnswer>((resolve, reject) => {
      const req = https.request(new URL(apiPath, server), request, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('error', reject);
        res.once('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text) as unknown;
          } catch {
            body = undefined;
          }
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve({ status: res.statusCode ?? 0, text, body, headers });
        });
      });
      req.once('error', reject);
      req.end(options.body);
    });
  } finally {
    if (request.agent instanceof https.Agent) request.agent.destroy();
  }
}

/** Where a kind is served: its plural and scope, from the apiserver's discovery document. */
export interface ServedResource {
  readonly groupVersionPath: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

/** `/api/v1` or `/apis/<group>/<version>`. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/**
 * The resource serving `kind` in `apiVersion`, or undefined when the apiserver does not serve that group
 * version (404) or that kind in it.
 */
export async function servedResource(apiVersion: string, kind: string): Promise<ServedResource | undefined> {
  const gvPath = groupVersionPath(apiVersion);
  const answer = await apiserverRequest('GET', gvPath);
  if (answer.status === 404) return undefined;
  if (answer.status !== 200) throw new Error(`GET ${gvPath} answered HTTP ${answer.status}: ${answer.text}`);
  const resources = (answer.body as { resources?: { name: string; kind: string; namespaced: boolean }[] }).resources;
  const found = (resources ?? []).find((r) => r.kind === kind && !r.name.includes('/'));
  return found && { groupVersionPath: gvPath, plural: found.name, namespaced: found.namespaced };
}

function metadataOf(object: Wire): { name: string; namespace?: string } {
  const meta = object.metadata;
  if (!isRecord(meta) || typeof meta.name !== 'string') throw new Error('the object has no metadata.name');
  return typeof meta.namespace === 'string' ? { name: meta.name, namespace: meta.namespace } : { name: meta.name };
}

/** The object's REST path (`/apis/apps/v1/namespaces/ns/deployments/name`). */
export function objectPath(object: Wire, resource: ServedResource): string {
  const { name, namespace } = metadataOf(object);
  if (resource.namespaced && !namespace) throw new Error(`${resource.plural}/${name} needs a metadata.namespace`);
  const scope = resource.namespaced ? `/namespaces/${encodeURIComponent(namespace!)}` : '';
  return `${resource.groupVersionPath}${scope}/${resource.plural}/${encodeURIComponent(name)}`;
}

/** The apiserver refused an apply: its HTTP status and the message of the Status it answered. */
export class ApplyRefused extends Error {
  constructor(
    readonly status: number,
    readonly apiserverMessage: string,
    what: string,
  ) {
    super(`the apiserver refused ${what}: HTTP ${status}: ${apiserverMessage}`);
    this.name = 'ApplyRefused';
  }
}

export interface ApplyOptions {
  /** dryRun=All: validated and admitted, not stored. */
  readonly dryRun: boolean;
  readonly fieldManager: string;
}

/** Server-side apply of `object` (force: take over fields another manager owns); the object the apiserver answers. */
export async function serverSideApply(object: Wire, resource: ServedResource, options: ApplyOptions): Promise<Wire> {
  const query = new URLSearchParams({ fieldManager: options.fieldManager, force: 'true' });
  if (options.dryRun) query.set('dryRun', 'All');
  const target = objectPath(object, resource);
  const answer = await apiserverRequest('PATCH', `${target}?${query.toString()}`, {
    body: stringify(object),
    contentType: 'application/apply-patch+yaml',
  });
  if (answer.status !== 200 && answer.status !== 201) {
    const message =
      isRecord(answer.body) && typeof answer.body.message === 'string' ? answer.body.message : answer.text;
    throw new ApplyRefused(answer.status, message, `${String(object.kind)} ${target}`);
  }
  if (!isRecord(answer.body))
    throw new Error(`apply of ${target} answered a body that is not an object: ${answer.text}`);
  return answer.body;
}

/**
 * Where `actual` (what the apiserver answered) differs from `expected` (the manifest): every value of the
 * manifest must be in the answer — a missing one was pruned or dropped. The apiserver may add defaults,
 * omits empty values (Go `omitempty`) and writes numbers of string fields as strings.
 */
export function differences(expected: unknown, actual: unknown, at = ''): string[] {
  const isEmpty = (v: unknown) =>
    v === '' || (Array.isArray(v) && v.length === 0) || (isRecord(v) && Object.keys(v).length === 0);
  if (actual === undefined && isEmpty(expected)) return [];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) {
      return [`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
    }
    return expected.flatMap((e, i) => differences(e, actual[i], `${at}[${i}]`));
  }
  if (isRecord(expected)) {
    if (!isRecord(actual)) return [`${at}: expected an object, got ${JSON.stringify(actual)}`];
    return Object.entries(expected).flatMap(([k, v]) => differences(v, actual[k], at ? `${at}.${k}` : k));
  }
  if (expected === actual || (typeof expected === 'number' && actual === String(expected))) return [];
  return [`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

function crdName(crd: Wire): string {
  return String((crd.metadata as Wire).name);
}

/** Applies a CRD for real and waits until it is Established and its kind is in discovery. */
export async function applyCrd(crd: Wire, fieldManager: string): Promise<ServedResource> {
  const resource = await servedResource('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
  assert.ok(resource, 'apiextensions.k8s.io/v1 is served');
  const applied = await serverSideApply(crd, resource, { dryRun: false, fieldManager });
  assert.deepEqual(differences(crd.spec, applied.spec), [], `${crdName(crd)} stored as written`);
  await eventually(`CRD ${crdName(crd)} to be Established`, async () => {
    const read = await apiserverRequest('GET', `${CRD_PATH}/${crdName(crd)}`);
    const conditions = ((read.body as { status?: { conditions?: { type: string; status: string }[] } }).status
      ?.conditions ?? []) as { type: string; status: string }[];
    return conditions.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
  });
  const spec = crd.spec as { group: string; names: { kind: string }; versions: { name: string }[] };
  return eventually(`${spec.names.kind} to be in discovery`, () =>
    servedResource(`${spec.group}/${spec.versions[0]!.name}`, spec.names.kind),
  );
}

export async function deleteCrd(name: string): Promise<void> {
  const answer = await apiserverRequest('DELETE', `${CRD_PATH}/${name}`);
  if (answer.status !== 200 && answer.status !== 202 && answer.status !== 404) {
    throw new Error(`DELETE CRD ${name} answered HTTP ${answer.status}: ${answer.text}`);
  }
}
