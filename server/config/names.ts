/** Kubernetes name syntax (DNS-1123), for config validation and the manifests command alike. */

/** A DNS-1123 label without the length rule: lower-case alphanumerics and '-', alphanumeric at both ends. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A DNS-1123 label: at most 63 characters. */
export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS_LABEL.test(value);
}

/** A DNS-1123 subdomain: DNS labels joined by dots, at most 253 characters (Secret, Service and webhook names). */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && DNS_SUBDOMAIN.test(value);
}
