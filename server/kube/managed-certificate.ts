/**
 * The serving certificate kept in a Secret (cluster mode with `kube.certificate.secretName`): every replica
 * runs the same reconcile loop — read the Secret, make the webhook configurations carry its CA bundle,
 * decide the due rotation step (server/tls/rotation.ts) and write it with optimistic concurrency — and
 * watches the Secret to swap its TLS context in memory as soon as any replica changed it. Nothing is
 * written to disk (the pod's root filesystem is read-only).
 */
import { ListWatch, Watch, CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { caBundle, newKeyPair, type SubjectAltNames } from '../../certs/generate.js';
import type { ManagedCertificateConfig } from '../config/types.js';
import type { Logger } from '../base/log.js';
import { materialFromPem, type CertificateSource } from '../tls/certificate-source.js';
import {
  initialContent,
  parseManagedSecret,
  promoteContent,
  pruneContent,
  reissueContent,
  SECRET_KEYS,
  stageContent,
  type CertificateState,
  type IssueParams,
  type ParseResult,
  type SecretContent,
} from '../tls/managed-secret.js';
import { decideRotation, phaseOf, type RotationAction, type RotationPolicy } from '../tls/rotation.js';
import type { TlsMaterial } from '../tls/serving-certificate.js';
import { contentOf, createCertificateSecretStore, type CertificateSecretStore } from './certificate-secret.js';
import { runInformer, type BackoffOptions, type InformerRunner } from './informer-runner.js';
import { kubeErrorMessage } from './kube-errors.js';
import { createWebhookBundleSync, type WebhookBundleSync } from './webhook-ca-bundle.js';

export type RotationStep = 'create' | 'regenerate' | 'stage' | 'promote' | 'prune' | 'reissue';

export interface ManagedCertificateOptions {
  readonly kc: KubeConfig;
  readonly config: ManagedCertificateConfig;
  readonly sans: SubjectAltNames;
  readonly log: Logger;
  /** Retry backoff while the apiserver cannot be reached, and the watch's reconnect backoff. */
  readonly backoff?: BackoffOptions;
  /** Told about every rotation step this replica wrote (for a metric). */
  readonly onStep?: (step: RotationStep) => void;
  /** Told about the connection state of the Secret watch. */
  readonly onConnectionChange?: (connected: boolean) => void;
  readonly now?: () => Date;
}

export interface ManagedCertificate {
  /**
   * Creates or reads the Secret (retrying with backoff, logging each failure, until it yields a usable
   * certificate or stop() is called) and returns the certificate source for startGateway.
   */
  prepare(clientCA?: Buffer): Promise<CertificateSource>;
  /** Starts the watch and the periodic reconcile. */
  start(): void;
  stop(): Promise<void>;
}

/**
 * New key pairs each step makes, in the order the transitions of managed-secret.ts use them (initial: the
 * CA, then the serving certificate). They are made first, on the thread pool, so reviews do not wait behind
 * RSA key generation (docs/decisions.md, "Keys are generated on the thread pool").
 */
const KEY_PAIRS: Readonly<Record<RotationAction['kind'], number>> = {
  create: 2,
  regenerate: 2,
  stage: 1,
  promote: 1,
  reissue: 1,
  prune: 0,
  wait: 0,
};

/** Enough passes for create → patch → stage → patch in one go, and to re-decide after conflicts. */
const MAX_PASSES = 6;

export function createManagedCertificate(options: ManagedCertificateOptions): ManagedCertificate {
  const { kc, config, log, sans } = options;
  const now = options.now ?? (() => new Date());
  const ref = { namespace: config.secretNamespace, name: config.secretName };
  const store: CertificateSecretStore = createCertificateSecretStore(kc, ref);
  const bundles: WebhookBundleSync = createWebhookBundleSync(
    kc,
    { mutating: config.mutatingWebhookConfigurations, validating: config.validatingWebhookConfigurations },
    log,
  );
  const policy: RotationPolicy = config;
  const listeners = new Set<(m: TlsMaterial) => void>();
  let material: TlsMaterial | undefined;
  /** PEM client CA for mTLS (server.tls.clientCAFile), attached to every material. */
  let clientCA: Buffer | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<RotationAction | undefined> | undefined;
  let informer: InformerRunner | undefined;
  let wake: (() => void) | undefined;

  /** Serves the Secret's certificate when it differs from the one in use. */
  const apply = (state: CertificateState): void => {
    if (material?.fingerprint256 === state.serving.fingerprint256) return;
    const next = materialFromPem(state.serving.pem, state.serving.key, clientCA);
    const first = material === undefined;
    material = next;
    if (first) return;
    log.info(
      {
        secret: `${ref.namespace}/${ref.name}`,
        fingerprint256: next.fingerprint256,
        notAfter: next.notAfter.toISOString(),
      },
      'serving certificate changed in the Secret; now serving it',
    );
    for (const listener of listeners) {
      try {
        listener(next);
      } catch (err) {
        log.error({ err: kubeErrorMessage(err) }, 'certificate change listener failed');
      }
    }
  };

  const transition = async (
    action: RotationAction,
    parsed: ParseResult | undefined,
  ): Promise<SecretContent | undefined> => {
    const state = parsed?.ok ? parsed.state : undefined;
    const keyPairs = await Promise.all(Array.from({ length: KEY_PAIRS[action.kind] }, () => newKeyPair()));
    const params: IssueParams = {
      sans,
      caValiditySeconds: config.caValiditySeconds,
      certValiditySeconds: config.certValiditySeconds,
      // Taken after key generation, which takes a while on a busy node: the phase timestamps it becomes (start
      // of the propagation delay and of the overlap) are then those of the write, so neither delay is cut short.
      now: now(),
      keyPairs,
    };
    switch (action.kind) {
      case 'create':
      case 'regenerate':
        return initialContent(params);
      case 'stage':
        return state && stageContent(state, params);
      case 'promote':
        return state && promoteContent(state, params);
      case 'prune':
        return state && pruneContent(state);
      case 'reissue':
        return state && reissueContent(state, params);
      case 'wait':
        return undefined;
    }
  };

  const describeWrite = (action: RotationAction, written: SecretContent, before: CertificateState | undefined) => {
    const after = parseManagedSecret(written);
    if (!after.ok) return { secret: `${ref.namespace}/${ref.name}` };
    const s = after.state;
    return {
      secret: `${ref.namespace}/${ref.name}`,
      ...('reason' in action ? { reason: action.reason } : {}),
      servingFingerprint256: s.serving.fingerprint256,
      servingNotAfter: s.serving.notAfter.toISOString(),
      signingCaFingerprint256: s.signing.fingerprint256,
      signingCaNotAfter: s.signing.notAfter.toISOString(),
      ...(s.next ? { nextCaFingerprint256: s.next.fingerprint256, nextCaNotAfter: s.next.notAfter.toISOString() } : {}),
      bundle: s.bundle.map((c) => c.fingerprint256),
      ...(before ? { previousSigningCaFingerprint256: before.signing.fingerprint256 } : {}),
    };
  };

  const MESSAGES: Record<RotationStep, string> = {
    create: 'certificate Secret created (new CA and serving certificate)',
    regenerate: 'certificate Secret content unusable; replaced with a new CA and serving certificate',
    stage: 'CA rotation: next CA staged (bundle trusts old and new)',
    promote: 'CA rotation: serving certificate issued by the new CA (promoted)',
    prune: 'CA rotation: old CA pruned from the bundle',
    reissue: 'serving certificate reissued by the current CA',
  };

  const pass = async (): Promise<RotationAction | undefined> => {
    let last: RotationAction | undefined;
    for (let i = 0; i < MAX_PASSES && !stopped; i++) {
      const secret: V1Secret | undefined = await store.read();
      const stored = secret && contentOf(secret);
      const parsed = stored && parseManagedSecret(stored);
      let trusted = false;
      let patched = false;
      if (parsed?.ok) {
        apply(parsed.state);
        const bundlePem = stored!.data[SECRET_KEYS.bundle] ?? '';
        const result = await bundles.sync(caBundle(bundlePem), {
          phase: phaseOf(parsed.state),
          bundle: parsed.state.bundle.map((c) => c.fingerprint256),
        });
        trusted = result.current;
        patched = result.patched.length > 0;
      }
      const action = decideRotation({ secret: parsed, now: now(), policy, sans, webhooksTrustBundle: trusted });
      last = action;
      // After a caBundle write, read the Secret again: another replica may have moved on meanwhile, and the
      // webhooks must end up with the bundle of the newest Secret.
      if (action.kind === 'wait') {
        if (patched) continue;
        return action;
      }
      const content = await transition(action, parsed);
      if (!content) return action;
      const outcome = await store.write(secret, content);
      if (outcome === 'conflict') {
        log.debug({ step: action.kind }, 'certificate Secret changed meanwhile (another replica); re-reading');
        continue;
      }
      const step = action.kind;
      const detail = describeWrite(action, content, parsed?.ok ? parsed.state : undefined);
      if (step === 'regenerate') log.warn(detail, `${MESSAGES[step]}: ${action.reason}`);
      else log.info(detail, MESSAGES[step]);
      options.onStep?.(step);
    }
    return last;
  };

  const reconcile = (): Promise<RotationAction | undefined> => {
    // One pass at a time per replica; a request during a pass waits for it.
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  };

  /** Next pass after resyncSeconds, or sooner when the last decision named a time (end of a delay). */
  const schedule = (last?: RotationAction): void => {
    if (stopped) return;
    clearTimeout(timer);
    let delay = config.resyncSeconds * 1000;
    if (last?.kind === 'wait' && last.until)
      delay = Math.min(delay, Math.max(last.until.getTime() - now().getTime(), 50));
    timer = setTimeout(() => {
      reconcile().then(
        (action) => schedule(action),
        (err: unknown) => {
          log.warn({ err: kubeErrorMessage(err) }, 'certificate reconcile failed; retrying');
          schedule();
        },
      );
    }, delay);
    timer.unref();
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      t.unref();
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });

  return {
    async prepare(ca) {
      clientCA = ca;
      const initialMs = options.backoff?.initialMs ?? 500;
      const maxMs = options.backoff?.maxMs ?? 30_000;
      let delay = initialMs;
      while (!material) {
        if (stopped) throw new Error('stopped before the certificate Secret was read');
        try {
          await reconcile();
        } catch (err) {
          log.warn(
            { secret: `${ref.namespace}/${ref.name}`, err: kubeErrorMessage(err), retryInMs: delay },
            'cannot create or read the certificate Secret; retrying',
          );
        }
        if (material) break;
        await sleep(delay);
        delay = Math.min(delay * 2, maxMs);
      }
      const initial: TlsMaterial = material;
      log.info(
        {
          secret: `${ref.namespace}/${ref.name}`,
          fingerprint256: initial.fingerprint256,
          notAfter: initial.notAfter.toISOString(),
        },
        'serving certificate loaded from the Secret',
      );
      return {
        initial,
        onChange(listener) {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
      };
    },
    start() {
      if (stopped) return;
      const core = kc.makeApiClient(CoreV1Api);
      const fieldSelector = `metadata.name=${ref.name}`;
      const watch = new ListWatch<V1Secret>(
        `/api/v1/namespaces/${ref.namespace}/secrets`,
        new Watch(kc),
        () => core.listNamespacedSecret({ namespace: ref.namespace, fieldSelector }),
        false,
        undefined,
        fieldSelector,
      );
      const onSecret = (secret: V1Secret): void => {
        const parsed = parseManagedSecret(contentOf(secret));
        if (parsed.ok) apply(parsed.state);
      };
      watch.on('add', onSecret);
      watch.on('update', onSecret);
      informer = runInformer(`secret ${ref.namespace}/${ref.name}`, watch, log, {
        ...(options.backoff ? { backoff: options.backoff } : {}),
        ...(options.onConnectionChange ? { onConnectionChange: options.onConnectionChange } : {}),
      });
      void informer.start();
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      wake?.();
      await informer?.stop();
      await running?.catch(() => undefined);
    },
  };
}
