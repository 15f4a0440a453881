/**
 * Self-registration: on start, the provider makes sure its AdmissionProvider exists and says where it is,
 * with a server-side apply under its own field manager (registration-spec.ts says which fields it owns).
 * Fields it does not own are never sent, so an operator's edits to them survive every restart.
 *
 * The apply is forced: the provider is the only authority on its address and CA, and a stale owner of those
 * fields (a hand-written AdmissionProvider, an earlier tool) must not keep it unreachable; forcing takes
 * nothing but the fields sent. Defaults for operator fields are applied once, without force, when the
 * registration is created, then handed to a second field manager so that the provider's next apply — which
 * omits them — does not remove them; from then on whoever edits them owns them.
 *
 * Registration runs beside serving and never stops it: while the apiserver cannot be reached, answers 5xx or
 * 429, or refuses for want of RBAC (403), a missing CRD or owner (404), it is retried with capped exponential
 * backoff; a registration the apiserver finds invalid is not retried. It happens once per start: a
 * registration deleted later is not recreated until the provider restarts, so deleting it removes the provider.
 *
 * client-node is imported by the first attempt, not with this module: `admission-gateway provider` loads this
 * module whether or not it registers, and the library is tens of MiB.
 */
import type { ConfigurationOptions, KubeConfig, ObservableMiddleware } from '@kubernetes/client-node';
import type { Phase } from '../admission/types.js';
import { clip, stripControl } from '../base/limits.js';
import type { Logger } from '../base/log.js';
import { PROVIDER_RESOURCE, PROVIDER_GROUP } from '../kube/admission-provider.js';
import { kubeErrorMessage, statusCode } from '../kube/kube-errors.js';
import {
  DEFAULT_FIELDS,
  ownedRegistration,
  specFields,
  specFieldsAppliedBy,
  withDefaults,
  type AppliedProvider,
  type ProviderLocation,
  type RegistrationDefaults,
  type RegistrationOwner,
} from './registration-spec.js';

/** The field manager of everything the provider registers about itself. */
export const REGISTRATION_FIELD_MANAGER = 'admission-gateway-provider';
/** The field manager that keeps the defaults once the registration exists (the operator's side). */
export const DEFAULTS_FIELD_MANAGER = 'admission-gateway-provider-defaults';

export interface RegistrationOptions extends ProviderLocation {
  /** Credentials: a kubeconfig, or the in-cluster service account (`KubeConfig.loadFromCluster()`). */
  readonly kubeConfig: KubeConfig;
  /** metadata.name of the AdmissionProvider: a DNS-1123 label (its steps are `<handler>.<name>`). */
  readonly name: string;
  /** PEM of the CA(s) the serving certificate chains to; without it the gateway trusts its system store. */
  readonly ca?: string | Buffer;
  /**
   * A ClusterRoleBinding (cluster-scoped, as the AdmissionProvider) whose deletion deletes the registration
   * through the garbage collector: the binding that lets the provider register, part of its install.
   */
  readonly ownerClusterRoleBinding?: string;
  /** Operator fields set once, when the registration is created. */
  readonly defaults?: RegistrationDefaults;
  /** Backoff between attempts: doubles from `initialMs` (1 s) up to `maxMs` (60 s). */
  readonly retry?: { readonly initialMs?: number; readonly maxMs?: number };
  /** Each request to the apiserver. Default 10 s. */
  readonly requestTimeoutMs?: number;
}

/** Why an attempt failed; `retryInMs` is undefined when it will not be retried. */
export interface RegistrationFailure {
  readonly reason:
    | 'Unreachable'
    | 'ServerError'
    | 'TooManyRequests'
    | 'Unauthorized'
    | 'Forbidden'
    | 'NotFound'
    | 'Conflict'
    | 'Invalid';
  readonly status?: number;
  readonly message: string;
  readonly retryInMs?: number;
}

export type RegistrationState =
  | {
      readonly state: 'registering';
      readonly name: string;
      readonly attempts: number;
      readonly lastError?: RegistrationFailure;
    }
  | {
      readonly state: 'registered';
      readonly name: string;
      readonly attempts: number;
      readonly uid: string;
      readonly resourceVersion: string;
      /** Whether this start created the registration. */
      readonly created: boolean;
    }
  | {
      readonly state: 'failed';
      readonly name: string;
      readonly attempts: number;
      readonly lastError: RegistrationFailure;
    }
  | { readonly state: 'stopped'; readonly name: string; readonly attempts: number };

export interface Registration {
  state(): RegistrationState;
  /** Resolves once registered, refused for good, or stopped; never rejects. */
  readonly settled: Promise<RegistrationState>;
  /** Stops retrying (the registration stays: a restarting provider must not leave the chain). */
  stop(): void;
}

class AttemptFailed extends Error {
  constructor(readonly failure: Omit<RegistrationFailure, 'retryInMs'>) {
    super(failure.message);
  }
}

const BY_STATUS: Readonly<Record<number, RegistrationFailure['reason']>> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  429: 'TooManyRequests',
};

/**
 * What a failed request means for the registration: all but `Invalid` may pass, and are retried. Without an
 * HTTP status (client-node's ApiException carries one) the apiserver was not reached, or did not answer in time.
 */
function failureOf(what: string, err: unknown): AttemptFailed {
  const status = statusCode(err);
  // The apiserver's Status message can be long and is logged: one clipped line of it.
  const message = `${what}: ${clip(stripControl(kubeErrorMessage(err)), 1024)}`;
  if (status === undefined) return new AttemptFailed({ reason: 'Unreachable', message });
  const reason = BY_STATUS[status] ?? (status >= 500 ? 'ServerError' : 'Invalid');
  return new AttemptFailed({ reason, status, message });
}

/** Options for one call: its deadline (or the registration's stop) as the request's signal, and a content type. */
type KubeClient = typeof import('@kubernetes/client-node');

/** The typed APIs the registration calls, and the module they come from. */
async function apiClients(kc: KubeConfig) {
  const kube: KubeClient = await import('@kubernetes/client-node');
  return {
    kube,
    objects: kc.makeApiClient(kube.CustomObjectsApi),
    rbac: kc.makeApiClient(kube.RbacAuthorizationV1Api),
  };
}

function callOptions(kube: KubeClient, signal: AbortSignal, contentType?: string): ConfigurationOptions {
  const { Observable, setHeaderOptions } = kube;
  const deadline: ObservableMiddleware = {
    pre: (request) => {
      request.setSignal(signal);
      return new Observable(Promise.resolve(request));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  const options: ConfigurationOptions = { middleware: [deadline], middlewareMergeStrategy: 'append' };
  return contentType ? setHeaderOptions('Content-Type', contentType, options) : options;
}

/** Why the log should say more than the apiserver did: what the operator has to fix. */
function hintFor(failure: RegistrationFailure, name: string, owner: string | undefined): string | undefined {
  if (failure.reason === 'Forbidden') {
    return (
      `the provider's account needs get, create and patch on admissionproviders.${PROVIDER_GROUP} named "${name}"` +
      (owner ? ` and get on the clusterrolebinding "${owner}"` : '') +
      ' (manifests/examples/provider/rbac.yaml)'
    );
  }
  if (failure.reason === 'NotFound') {
    return `is the AdmissionProvider CRD installed${owner ? ` and the clusterrolebinding "${owner}" there` : ''}?`;
  }
  return undefined;
}

/** The defaults to apply, if any. */
function defaultsOf(options: RegistrationOptions): RegistrationDefaults | undefined {
  return options.defaults && Object.keys(options.defaults).length > 0 ? options.defaults : undefined;
}

/**
 * Throws RegistrationOptionsError naming the option when `options` cannot make a valid registration for
 * handlers in `phases` (checked with the gateway's own rules for AdmissionProviders).
 */
export function checkRegistrationOptions(options: RegistrationOptions, phases: readonly Phase[]): void {
  const object = ownedRegistration(options.name, options, options.ca, phases);
  const defaults = defaultsOf(options);
  if (defaults) withDefaults(object, defaults);
}

/**
 * Starts registering the provider, whose handlers are in `phases`; returns at once. Options are checked
 * first (checkRegistrationOptions): a mistake throws before any request.
 */
export function registerProvider(
  options: RegistrationOptions & { readonly phases: readonly Phase[]; readonly log: Logger },
): Registration {
  checkRegistrationOptions(options, options.phases);
  const { kubeConfig: kc, name, log } = options;
  const desired = (owner?: RegistrationOwner) => ownedRegistration(name, options, options.ca, options.phases, owner);
  const defaults = defaultsOf(options);
  const initialMs = options.retry?.initialMs ?? 1000;
  const maxMs = options.retry?.maxMs ?? 60_000;
  const timeoutMs = options.requestTimeoutMs ?? 10_000;
  const owner = options.ownerClusterRoleBinding;

  let current: RegistrationState = { state: 'registering', name, attempts: 0 };
  let timer: NodeJS.Timeout | undefined;
  const stopping = new AbortController();
  let settle!: (state: RegistrationState) => void;
  const settled = new Promise<RegistrationState>((resolve) => (settle = resolve));
  const finish = (state: RegistrationState) => {
    current = state;
    settle(state);
  };

  let loaded: ReturnType<typeof apiClients> | undefined;
  const clients = () => (loaded ??= apiClients(kc));

  /** One request, bounded by `timeoutMs` and the registration's stop; a failure becomes an AttemptFailed. */
  const call = async <T>(what: string, send: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    const deadline = AbortSignal.timeout(timeoutMs);
    try {
      return await send(AbortSignal.any([deadline, stopping.signal]));
    } catch (err) {
      if (deadline.aborted) {
        throw new AttemptFailed({ reason: 'Unreachable', message: `${what}: no answer within ${timeoutMs} ms` });
      }
      throw failureOf(what, err);
    }
  };

  const apply = async (object: AppliedProvider, manager: string, force: boolean) => {
    const { kube, objects } = await clients();
    const answer = await call(`apply AdmissionProvider "${name}" (field manager ${manager})`, (signal) =>
      objects.patchClusterCustomObjectWithHttpInfo(
        { ...PROVIDER_RESOURCE, name, body: object, fieldManager: manager, force },
        callOptions(kube, signal, kube.PatchStrategy.ServerSideApply),
      ),
    );
    return {
      object: answer.data as AppliedProvider & { metadata: StoredMetadata },
      created: answer.httpStatusCode === 201,
    };
  };

  const readOwner = async (binding: string): Promise<RegistrationOwner> => {
    const what = `read the clusterrolebinding "${binding}" (the registration's owner)`;
    const { kube, rbac } = await clients();
    const read = await call(what, (signal) =>
      rbac.readClusterRoleBinding({ name: binding }, callOptions(kube, signal)),
    );
    const uid = read.metadata?.uid;
    if (!uid) throw new AttemptFailed({ reason: 'ServerError', message: `${what}: the answer has no metadata.uid` });
    return { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', name: binding, uid };
  };

  const readLive = async () => {
    const { kube, objects } = await clients();
    try {
      return (await call(`read AdmissionProvider "${name}"`, (signal) =>
        objects.getClusterCustomObject({ ...PROVIDER_RESOURCE, name }, callOptions(kube, signal)),
      )) as AppliedProvider & { metadata: StoredMetadata };
    } catch (err) {
      if (err instanceof AttemptFailed && err.failure.status === 404) return undefined;
      throw err;
    }
  };

  /** One pass: ensure the registration; resolves with the stored object. */
  const attempt = async () => {
    const object = desired(owner ? await readOwner(owner) : undefined);
    let created = false;
    if (defaults) {
      let live = await readLive();
      if (!live) {
        // Not forced: an operator who created it meanwhile keeps their values (the conflict is retried).
        ({ object: live, created } = await apply(withDefaults(object, defaults), REGISTRATION_FIELD_MANAGER, false));
      }
      // Also after a crash between these steps: defaults still held by the provider's manager move over.
      const held = specFieldsAppliedBy(live, REGISTRATION_FIELD_MANAGER).filter((f) =>
        (DEFAULT_FIELDS as readonly string[]).includes(f),
      );
      if (held.length > 0) {
        const handover = { ...object, metadata: { name }, spec: specFields(live, held) };
        await apply(handover, DEFAULTS_FIELD_MANAGER, false);
      }
    }
    const applied = await apply(object, REGISTRATION_FIELD_MANAGER, true);
    return { stored: applied.object, created: created || applied.created };
  };

  const run = async (): Promise<void> => {
    if (stopping.signal.aborted) return;
    const attempts = current.attempts + 1;
    current = { ...current, attempts };
    try {
      const { stored, created } = await attempt();
      const state: RegistrationState = {
        state: 'registered',
        name,
        attempts,
        uid: stored.metadata.uid ?? '',
        resourceVersion: stored.metadata.resourceVersion ?? '',
        created,
      };
      log.info({ provider: name, uid: state.uid, created, attempts }, 'provider registered');
      finish(state);
    } catch (err) {
      if (stopping.signal.aborted) return;
      const failure = err instanceof AttemptFailed ? err.failure : { reason: 'Invalid' as const, message: String(err) };
      const hint = hintFor(failure, name, owner);
      if (failure.reason === 'Invalid') {
        log.error({ provider: name, ...failure, hint }, 'provider registration refused; not retried');
        finish({ state: 'failed', name, attempts, lastError: failure });
        return;
      }
      const retryInMs = Math.min(initialMs * 2 ** (attempts - 1), maxMs);
      const lastError: RegistrationFailure = { ...failure, retryInMs };
      current = { state: 'registering', name, attempts, lastError };
      const fields = { provider: name, ...lastError, ...(hint ? { hint } : {}) };
      if (hint) log.error(fields, 'provider registration failed; retrying');
      else log.warn(fields, 'provider registration failed; retrying');
      timer = setTimeout(() => void run(), retryInMs);
    }
  };

  void run();
  return {
    state: () => current,
    settled,
    stop() {
      if (stopping.signal.aborted) return;
      stopping.abort();
      clearTimeout(timer);
      if (current.state === 'registering') finish({ state: 'stopped', name, attempts: current.attempts });
    },
  };
}

interface StoredMetadata {
  readonly name: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly managedFields?: unknown;
}
