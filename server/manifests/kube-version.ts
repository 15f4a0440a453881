/**
 * The Kubernetes version `manifests --kube-version` renders for, and the versions from which the features it
 * renders are served. The e2e suite runs on the newest tested version and on the 1.20 floor (README,
 * "Supported Kubernetes versions").
 */
import { ManifestsUsageError } from './usage-error.js';

export interface KubeVersion {
  readonly major: 1;
  readonly minor: number;
}

/** The newest version the e2e suite runs against: what `manifests` renders for by default. */
export const NEWEST_TESTED: KubeVersion = { major: 1, minor: 37 };
/** admissionregistration.k8s.io/v1, which every rendered webhook configuration is. */
export const OLDEST_RENDERED: KubeVersion = { major: 1, minor: 16 };

/** The first minor version serving each feature the renderer uses. */
export const SINCE = {
  /** The apiserver labels every namespace `kubernetes.io/metadata.name=<name>`. */
  namespaceNameLabel: 21,
  /** Webhook `matchConditions` (CEL), GA. */
  webhookMatchConditions: 30,
  /** `--authorization-config` (AuthorizationConfiguration apiserver.config.k8s.io/v1). */
  structuredAuthorization: 32,
  /** Field and label selectors in the SubjectAccessReviews the apiserver sends, GA. */
  authorizationSelectors: 34,
} as const;

export const atLeast = (version: KubeVersion, minor: number): boolean => version.minor >= minor;

export const formatKubeVersion = (version: KubeVersion): string => `${version.major}.${version.minor}`;

/** `1.37` or `1.37.2` (a leading `v` is fine); the patch level changes nothing that is rendered. */
export function parseKubeVersion(text: string): KubeVersion {
  const m = /^v?1\.(\d{1,3})(?:\.\d{1,4})?$/.exec(text);
  const minor = m ? Number(m[1]) : NaN;
  if (!m || minor < OLDEST_RENDERED.minor) {
    throw new ManifestsUsageError(
      `--kube-version: expected a Kubernetes version from ${formatKubeVersion(OLDEST_RENDERED)} on, such as ` +
        `${formatKubeVersion(NEWEST_TESTED)} or ${formatKubeVersion(NEWEST_TESTED)}.2, got "${text}"`,
    );
  }
  return { major: 1, minor };
}
