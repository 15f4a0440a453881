/**
 * Reads and writes the certificate Secret with optimistic concurrency: every update carries the
 * resourceVersion that was read, and a create that loses a race gets 409 AlreadyExists. Either way the
 * caller learns `conflict` and re-reads: another replica acted, and the decision is made again on its result.
 */
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { ANNOTATIONS, type SecretContent } from '../tls/managed-secret.js';
import { statusCode } from './kube-errors.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../base/managed-by.js';

const OUR_ANNOTATIONS: readonly string[] = Object.values(ANNOTATIONS);

export interface SecretRef {
  readonly namespace: string;
  readonly name: string;
}

export interface CertificateSecretStore {
  /** The Secret, or undefined when it does not exist. */
  read(): Promise<V1Secret | undefined>;
  /** Creates (when `current` is undefined) or updates it; `conflict` when another writer came first. */
  write(current: V1Secret | undefined, content: SecretContent): Promise<'written' | 'conflict'>;
}

/** The Secret's data as PEM text, and its annotations. */
export function contentOf(secret: V1Secret): SecretContent {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    data[key] = Buffer.from(value, 'base64').toString('utf8');
  return { data, annotations: { ...(secret.metadata?.annotations ?? {}) } };
}

function encode(data: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
}

/** Keeps annotations others set (kubectl's last-applied, ...); ours are replaced as a whole. */
function mergedAnnotations(
  existing: Readonly<Record<string, string>> | undefined,
  ours: Readonly<Record<string, string>>,
) {
  const kept = Object.entries(existing ?? {}).filter(([k]) => !OUR_ANNOTATIONS.includes(k));
  return { ...Object.fromEntries(kept), ...ours };
}

export function createCertificateSecretStore(kc: KubeConfig, ref: SecretRef): CertificateSecretStore {
  const core = kc.makeApiClient(CoreV1Api);
  return {
    async read() {
      try {
        return await core.readNamespacedSecret(ref);
      } catch (err) {
        if (statusCode(err) === 404) return undefined;
        throw err;
      }
    },
    async write(current, content) {
      try {
        if (!current) {
          await core.createNamespacedSecret({
            namespace: ref.namespace,
            body: {
              metadata: {
                name: ref.name,
                namespace: ref.namespace,
                labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
                annotations: mergedAnnotations(undefined, content.annotations),
              },
              type: 'kubernetes.io/tls',
              data: encode(content.data),
            },
          });
        } else {
          const body: V1Secret = {
            ...current,
            metadata: {
              ...current.metadata,
              annotations: mergedAnnotations(current.metadata?.annotations, content.annotations),
            },
            data: encode(content.data),
          };
          await core.replaceNamespacedSecret({ ...ref, body });
        }
        return 'written';
      } catch (err) {
        if (statusCode(err) === 409) return 'conflict';
        throw err;
      }
    },
  };
}
