/**
 * Keeps the caBundle of the gateway's own webhook configurations equal to the CA bundle of its Secret:
 * after a CA is staged or pruned, and whenever someone re-applies the manifests with an empty caBundle.
 * Each write is an update carrying the resourceVersion that was read, so a concurrent writer (another
 * replica, kubectl) makes it fail with 409 instead of being overwritten; the next pass re-reads.
 */
import {
  AdmissionregistrationV1Api,
  type KubeConfig,
  type V1MutatingWebhookConfiguration,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import type { Logger } from '../base/log.js';
import { kubeErrorMessage, statusCode } from './kube-errors.js';

export interface WebhookTargets {
  readonly mutating: readonly string[];
  readonly validating: readonly string[];
}

export interface BundleSyncResult {
  /** Every configured configuration that exists already carried the bundle (no write was needed). */
  readonly current: boolean;
  /** `mutating/<name>` of each configuration written now. */
  readonly patched: readonly string[];
}

export interface WebhookBundleSync {
  /** Reads each configuration and writes the bundle where a webhook lacks it. Never throws: failures are logged. */
  sync(caBundleBase64: string, detail: Readonly<Record<string, unknown>>): Promise<BundleSyncResult>;
}

type AnyConfiguration = V1MutatingWebhookConfiguration | V1ValidatingWebhookConfiguration;

interface Kind {
  readonly kind: 'mutating' | 'validating';
  read(name: string): Promise<AnyConfiguration>;
  replace(name: string, body: AnyConfiguration): Promise<unknown>;
}

export function createWebhookBundleSync(kc: KubeConfig, targets: WebhookTargets, log: Logger): WebhookBundleSync {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const kinds: [Kind, readonly string[]][] = [
    [
      {
        kind: 'mutating',
        read: (name) => api.readMutatingWebhookConfiguration({ name }),
        replace: (name, body) => api.replaceMutatingWebhookConfiguration({ name, body }),
      },
      targets.mutating,
    ],
    [
      {
        kind: 'validating',
        read: (name) => api.readValidatingWebhookConfiguration({ name }),
        replace: (name, body) => api.replaceValidatingWebhookConfiguration({ name, body }),
      },
      targets.validating,
    ],
  ];
  // Log a missing configuration once, not every resync.
  const missing = new Set<string>();

  return {
    async sync(caBundle, detail) {
      let current = true;
      const patched: string[] = [];
      for (const [kind, names] of kinds) {
        for (const name of names) {
          const id = `${kind.kind}/${name}`;
          let config: AnyConfiguration;
          try {
            config = await kind.read(name);
          } catch (err) {
            if (statusCode(err) === 404) {
              // Nothing calls a configuration that does not exist, so it does not hold a rotation up.
              if (!missing.has(id))
                log.warn({ webhookConfiguration: id }, 'webhook configuration not found; caBundle not patched');
              missing.add(id);
              continue;
            }
            log.warn({ webhookConfiguration: id, err: kubeErrorMessage(err) }, 'cannot read webhook configuration');
            current = false;
            continue;
          }
          missing.delete(id);
          const webhooks = config.webhooks ?? [];
          if (webhooks.every((w) => w.clientConfig.caBundle === caBundle)) continue;
          current = false;
          for (const w of webhooks) w.clientConfig.caBundle = caBundle;
          try {
            await kind.replace(name, config);
            patched.push(id);
            log.info({ webhookConfiguration: id, webhooks: webhooks.length, ...detail }, 'caBundle patched');
          } catch (err) {
            const code = statusCode(err);
            log[code === 409 ? 'debug' : 'warn'](
              { webhookConfiguration: id, err: kubeErrorMessage(err) },
              code === 409 ? 'webhook configuration changed meanwhile; retrying' : 'cannot patch caBundle',
            );
          }
        }
      }
      return { current, patched };
    },
  };
}
