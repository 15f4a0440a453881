/**
 * Types of the plugin author API. The wire shapes are the gateway's own (`server/admission/types.ts`),
 * re-exported here, and spelled exactly as Kubernetes spells them (admission.k8s.io/v1,
 * admissionregistration.k8s.io/v1) so that a webhook author feels at home.
 */
import type { AdmissionRequest, JsonPatchOperation, KubeObject, Match, Operation } from '../admission/types.js';
import type { Logger } from '../base/log.js';
import type { StepOptions } from '../config/step-options.js';
import type { AuthorizeMatch } from '../authorization/authorize-match.js';
import type { SelectorRequirement } from '../authorization/attributes.js';

export type {
  AdmissionRequest,
  GroupVersionKind,
  GroupVersionResource,
  JsonPatchOperation,
  KubeObject,
  LabelSelector,
  LabelSelectorRequirement,
  Match,
  ObjectMeta,
  Operation,
  RuleWithOperations,
  UserInfo,
} from '../admission/types.js';
export type { Logger } from '../base/log.js';
export type { AuthorizeMatch } from '../authorization/authorize-match.js';
export type { SelectorRequirement } from '../authorization/attributes.js';

/** A returned decision. A thrown error is not a decision: it is a failure, handled by failurePolicy. */
export type Verdict =
  { readonly allowed: true } | { readonly allowed: false; readonly message: string; readonly code: number };

/** What every handler receives. */
export interface BaseContext {
  /** The request as the apiserver sent it (read-only; the object under review is `object`). */
  readonly request: Readonly<AdmissionRequest>;
  readonly operation: Operation;
  /** Aborts when this plugin's share of the request deadline is used up. */
  readonly signal: AbortSignal;
  /** Logger bound to this request and plugin. */
  readonly log: Logger;
  /** True for server-side dry-run requests. */
  readonly dryRun: boolean;
  /** Adds a warning shown to the client (prefixed with the plugin name by the gateway). */
  readonly warn: (message: string) => void;
  /** Adds an audit annotation; the gateway qualifies the key as `<plugin>.<key>`. */
  readonly annotate: (key: string, value: string) => void;
}

/** Context of `mutate`: `object` is the working copy — edit it in place, the gateway computes the patch. */
export interface MutateContext<T extends object = KubeObject> extends BaseContext {
  readonly object: T;
  readonly oldObject: Readonly<T> | undefined;
}

/** Context of `validate`: objects are read-only (writing throws); `object` is undefined on DELETE. */
export interface ValidateContext<T extends object = KubeObject> extends BaseContext {
  readonly object: Readonly<T> | undefined;
  readonly oldObject: Readonly<T> | undefined;
}

/** `mutate` may edit `ctx.object`, return JSON patch operations against it, return a Verdict, or nothing. */
export type MutateResult = void | Verdict | readonly JsonPatchOperation[];

/**
 * Context of `authorize`: one request to the apiserver, read or write, as its authorization webhook asks
 * about it (POST /authorize). Resource fields are '' for a non-resource request (`path` is set), and `path` is ''
 * for a resource request.
 */
export interface AuthorizeContext {
  readonly verb: string;
  /** '' for the core group. */
  readonly apiGroup: string;
  readonly apiVersion: string;
  readonly resource: string;
  /** `exec` for pods/exec; '' for the resource itself. */
  readonly subresource: string;
  /** '' for a cluster-scoped resource or a request across namespaces. */
  readonly namespace: string;
  /** '' for list, watch and create. */
  readonly name: string;
  /** The URL path of a non-resource request (`/healthz`). */
  readonly path: string;
  /**
   * What a list's, watch's or deletecollection's label selector narrows it to, as the apiserver parsed it
   * (Kubernetes 1.34+; empty when it has none, and always from older apiservers): `-l app=web` is
   * `[{ key: 'app', operator: 'In', values: ['web'] }]`. The requirements are ANDed.
   */
  readonly labelSelector: readonly SelectorRequirement[];
  /** The same for its field selector (`--field-selector type=Opaque`; `In` and `NotIn` only). */
  readonly fieldSelector: readonly SelectorRequirement[];
  readonly user: {
    readonly username: string;
    readonly uid: string;
    readonly groups: readonly string[];
    readonly extra: Readonly<Record<string, readonly string[]>>;
  };
  /** The labels of `namespace` (undefined when there is none, or it is not known). */
  readonly namespaceLabels: Readonly<Record<string, string>> | undefined;
  /** Aborts when this plugin's time is up. */
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/**
 * `authorize` forbids with `deny(reason)` (the user sees the reason in the 403) or has no opinion (returns
 * nothing, or `allow()`): the gateway never grants, RBAC decides what no step forbids.
 */
export type AuthorizeResult = void | Verdict;

/** What a plugin does for one chain entry's settings: `setup` returns it. */
export interface PluginHandlers<T extends object = KubeObject> {
  /** Runs in the mutate phase (serially, in chain order), only when the request carries an object. */
  mutate?(ctx: MutateContext<T>): MutateResult | Promise<MutateResult>;
  /** Runs in the validate phase (in parallel with the other validating steps). */
  validate?(ctx: ValidateContext<T>): Verdict | Promise<Verdict>;
  /** Runs for every request `authorizeMatch` selects, reads included (POST /authorize): keep it cheap. */
  authorize?(ctx: AuthorizeContext): AuthorizeResult | Promise<AuthorizeResult>;
}

export type { FailurePolicy, Mode, ReinvocationPolicy } from '../config/step-options.js';

/** Defaults a plugin suggests for its chain entry; the config can override each. */
export type PluginDefaults = Omit<StepOptions, 'sideEffects'>;

/**
 * An in-process plugin. Export one from a module in `plugins/` with `definePlugin` and list it in
 * `plugins/index.ts`; `gateway.yaml`'s `chain` decides whether and where it runs.
 */
export interface Plugin<S = undefined, T extends object = KubeObject> {
  /** Unique kebab-case name; used in logs, metric labels, denial messages and audit annotation keys. */
  readonly name: string;
  /** One line for `/chain` and `--help`. */
  readonly description?: string;
  /** Requests this plugin sees unless the chain entry gives its own `match`. */
  readonly match: Match;
  /** Authorization requests its `authorize` sees (required when setup returns one), written as an RBAC rule. */
  readonly authorizeMatch?: AuthorizeMatch;
  /**
   * Parses and validates the chain entry's `settings` at start. Throw `SettingsError` (or any Error) to
   * refuse the config; the gateway reports it with the field path and exits 2. Omit when there are none.
   */
  settings?(raw: unknown): S;
  readonly defaults?: PluginDefaults;
  /**
   * Called once per chain entry at start, with what `settings` returned: the handlers for those settings.
   * Return only the phases that have work (image-policy without mirrors returns no `mutate`): a phase left
   * out costs nothing on any review and gets no place in that phase's webhook.
   */
  setup(settings: S): PluginHandlers<T>;
}
