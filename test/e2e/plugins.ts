/**
 * Test-only plugins for the e2e suite, written with the same author API as the shipped ones. They are
 * handed to the in-process gateway next to `availablePlugins`; chain entries decide where they run.
 */
import {
  SettingsError,
  allow,
  definePlugin,
  deny,
  on,
  optionalString,
  settingsObject,
  type KubeObject,
} from '../../server/plugin-api/index.js';

/** Annotation `record-order` appends its token to: the stored value is the order the steps ran in. */
export const ORDER_ANNOTATION = 'e2e.admissiongateway.io/order';
/** `record-order` also writes what it saw of the object when it ran: `<prefix><token>`. */
export const SEEN_ANNOTATION_PREFIX = 'e2e.admissiongateway.io/seen-by-';
/** The label that makes `e2e-probe` act on a ConfigMap (the webhook-registration probe). */
export const PROBE_LABEL = 'e2e.admissiongateway.io/probe';
/** Annotation `e2e-probe` sets in the mutate phase: `<prefix><id>: seen`. */
export const PROBE_ANNOTATION_PREFIX = 'e2e.admissiongateway.io/probe-';

function requiredToken(raw: unknown, key: string): string {
  const settings = settingsObject(raw, [key]);
  const token = optionalString(settings, key, '');
  if (!/^[a-z0-9-]+$/.test(token)) throw new SettingsError(key, 'expected a lower-case token, e.g. first');
  return token;
}

function annotationsOf(object: Pick<KubeObject, 'metadata'>): Record<string, string> {
  object.metadata ??= {};
  object.metadata.annotations ??= {};
  return object.metadata.annotations;
}

/**
 * Appends its token to the `e2e.admissiongateway.io/order` annotation and records what it saw of the
 * object (first container's image and cpu request, the object's label keys) — evidence that each step
 * runs after, and sees the result of, the steps before it.
 */
export const recordOrder = definePlugin({
  name: 'record-order',
  description: 'e2e: appends its token to an annotation and records what it saw',
  match: on('pods').versions('v1').create(),
  settings: (raw) => requiredToken(raw, 'token'),
  setup: (token) => ({
    mutate({ object }) {
      const container = object.spec?.containers?.[0];
      const image = container?.image ?? 'none';
      const cpu = container?.resources?.requests?.cpu ?? 'none';
      const labels = Object.keys(object.metadata?.labels ?? {}).sort();
      const annotations = annotationsOf(object);
      const before = annotations[ORDER_ANNOTATION];
      annotations[ORDER_ANNOTATION] = before ? `${before},${token}` : token;
      annotations[`${SEEN_ANNOTATION_PREFIX}${token}`] = `image=${image};cpu=${cpu};labels=${labels.join('|')}`;
    },
  }),
});

/** The message `explode` throws with. */
export const EXPLOSION = 'exploded on purpose (e2e)';

/** Always throws: a failure (not a decision), so the entry's failurePolicy decides. */
export const explode = definePlugin({
  name: 'explode',
  description: 'e2e: throws on every call',
  match: on('pods').versions('v1').create(),
  setup: () => ({
    mutate() {
      throw new Error(EXPLOSION);
    },
  }),
});

/** Refuses to delete a ConfigMap labelled `protected: "true"`. */
export const protectConfigMaps = definePlugin({
  name: 'protect-configmaps',
  description: 'e2e: refuses to delete ConfigMaps labelled protected=true',
  match: on('configmaps').versions('v1').delete(),
  setup: () => ({
    validate({ oldObject, request, operation }) {
      if (operation !== 'DELETE') return allow();
      if (oldObject?.metadata?.labels?.protected !== 'true') return allow();
      return deny(`configmap ${request.name ?? '?'} is protected; remove the label protected=true first`);
    },
  }),
});

/**
 * The webhook-registration probe (test/e2e/gateway.ts appends it to every chain): on ConfigMaps labelled
 * `e2e.admissiongateway.io/probe` it sets `e2e.admissiongateway.io/probe-<id>` (mutate) and warns `seen`
 * (validate), so one dry-run create shows which of the gateway's webhooks the apiserver calls.
 */
export const e2eProbe = definePlugin({
  name: 'e2e-probe',
  description: 'e2e: marks probe ConfigMaps so the suite can see that a webhook registration is active',
  match: on('configmaps')
    .versions('v1')
    .create()
    .objectSelector({ matchExpressions: [{ key: PROBE_LABEL, operator: 'Exists' }] }),
  settings: (raw) => requiredToken(raw, 'id'),
  setup: (id) => ({
    mutate({ object }) {
      annotationsOf(object)[`${PROBE_ANNOTATION_PREFIX}${id}`] = 'seen';
    },
    validate(ctx) {
      ctx.warn('seen');
      return allow();
    },
  }),
});

/** The label that makes `hold` wait: its value names the gate (`holdGate`) the review waits at. */
export const HOLD_LABEL = 'e2e.admissiongateway.io/hold';
/** The label `hold` sets on every object it lets through. */
export const PASSED_HOLD_LABEL = 'e2e.admissiongateway.io/passed-hold';

/** A gate `hold` keeps reviews waiting at until the test opens it. */
export interface HoldGate {
  /** The value of HOLD_LABEL that sends an object's review to this gate. */
  readonly name: string;
  /** Resolves once a review waits at the gate. */
  readonly reached: Promise<void>;
  /** How many reviews have reached the gate. */
  readonly arrivals: number;
  /** Lets the reviews waiting at the gate, and every later one, go on. */
  open(): void;
}

interface GateState {
  arrive(): void;
  readonly opened: Promise<void>;
}

const gates = new Map<string, GateState>();

/** Registers a closed gate named `name` (a label value) for `hold`. */
export function holdGate(name: string): HoldGate {
  if (gates.has(name)) throw new Error(`hold gate ${name} exists already`);
  let reached!: () => void;
  let open!: () => void;
  const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  let arrivals = 0;
  gates.set(name, {
    arrive() {
      arrivals++;
      reached();
    },
    opened,
  });
  return {
    name,
    reached: reachedPromise,
    get arrivals() {
      return arrivals;
    },
    open,
  };
}

function abortion(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const abort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
}

/**
 * Keeps the review of an object labelled `e2e.admissiongateway.io/hold: <gate>` waiting until the test
 * opens that gate (or the step's deadline aborts it), so the review holds its share of the gateway's memory
 * meanwhile; then, as for every object it sees, sets `e2e.admissiongateway.io/passed-hold: "true"`.
 */
export const hold = definePlugin({
  name: 'hold',
  description: 'e2e: waits at the gate an object names before letting it through with a label',
  match: on('pods').versions('v1').create(),
  setup: () => ({
    async mutate({ object, signal }) {
      const name = object.metadata?.labels?.[HOLD_LABEL];
      if (name !== undefined) {
        const gate = gates.get(name);
        if (!gate) throw new Error(`no hold gate named ${name}`);
        gate.arrive();
        await Promise.race([gate.opened, abortion(signal)]);
      }
      object.metadata ??= {};
      object.metadata.labels ??= {};
      object.metadata.labels[PASSED_HOLD_LABEL] = 'true';
    },
  }),
});

export const testPlugins = [recordOrder, explode, protectConfigMaps, e2eProbe, hold] as const;
