/**
 * Tells whoever runs the gateway that a provider is called in a deprecated AdmissionReview version: a
 * warning logged once per version for as long as the provider's definition lasts, and the gauge
 * `admission_gateway_provider_deprecated_version{provider,version}` (its steps called in that version).
 * An AdmissionProvider also gets the condition Deprecated from the provider's status (kube/provider-status.ts).
 */
import type { Phase } from '../admission/types.js';
import type { Logger } from '../base/log.js';
import type { Metrics } from '../metrics/metrics.js';
import { deprecationNotice, isDeprecated, reviewApiVersion, type ReviewVersion } from '../protocol/versions.js';

/** The AdmissionReview version one of a provider's admission steps is called in. */
export interface StepVersion {
  readonly step: string;
  readonly phase: Phase;
  readonly version: ReviewVersion;
}

/** The steps called in each deprecated version, as `<step> (<phase>)`; empty when every call is current. */
export function deprecatedSteps(versions: readonly StepVersion[]): Map<ReviewVersion, string[]> {
  const steps = new Map<ReviewVersion, string[]>();
  for (const { step, phase, version } of versions) {
    if (isDeprecated(version)) steps.set(version, [...(steps.get(version) ?? []), `${step} (${phase})`]);
  }
  return steps;
}

export interface DeprecationReport {
  /** The provider's steps are now called in these versions. */
  report(versions: readonly StepVersion[]): void;
  /** The provider is gone: its gauge goes too. */
  close(): void;
}

export function createDeprecationReport(
  provider: string,
  deps: { readonly metrics: Metrics; readonly log: Logger },
): DeprecationReport {
  const logged = new Set<ReviewVersion>();
  const shown = new Set<ReviewVersion>();
  const gauge = deps.metrics.providerDeprecatedVersion;
  const forget = (version: ReviewVersion) => {
    gauge.remove({ provider, version: reviewApiVersion(version) });
    shown.delete(version);
  };
  return {
    report(versions) {
      const steps = deprecatedSteps(versions);
      for (const version of shown) if (!steps.has(version)) forget(version);
      for (const [version, names] of steps) {
        gauge.set({ provider, version: reviewApiVersion(version) }, names.length);
        shown.add(version);
        if (logged.has(version)) continue;
        logged.add(version);
        deps.log.warn(
          { provider, version: reviewApiVersion(version), steps: names, notice: deprecationNotice(version) },
          'provider is called in a deprecated AdmissionReview version',
        );
      }
    },
    close() {
      for (const version of shown) forget(version);
    },
  };
}
