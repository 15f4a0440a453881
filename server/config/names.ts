/**
 * Kubernetes name syntax (DNS-1123): the one place these rules are written, for step names (config entries,
 * plugins, AdmissionProviders, discovered handlers), namespaces and the manifests command alike.
 */

/** The longest DNS-1123 label, and so the longest step name. */
export const MAX_DNS_LABEL_CHARS = 63;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, at most 63 characters. */
export function isDnsLabel(value: string): boolean {
  return value.length <= MAX_DNS_LABEL_CHARS && DNS_LABEL.test(value);
}

/** A DNS-1123 subdomain: DNS labels joined by dots, at most 253 characters (Secret, Service and webhook names). */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && DNS_SUBDOMAIN.test(value);
}
