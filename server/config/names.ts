/**
 * Kubernetes name syntax: the one place these rules are written. DNS-1123 names for step names (config
 * entries, plugins, AdmissionProviders, discovered handlers), namespaces and the manifests command; label keys
 * and values, and qualified names (audit annotation keys), for the manifests command, the review's notes and
 * plugins (the plugin API re-exports them).
 */

import { DNS_LABEL_PATTERN, MAX_DNS_LABEL_CHARS } from '../base/step-rules.js';

export { MAX_DNS_LABEL_CHARS };
const DNS_LABEL = new RegExp(DNS_LABEL_PATTERN);
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, at most 63 characters. */
export function isDnsLabel(value: string): boolean {
  return value.length <= MAX_DNS_LABEL_CHARS && DNS_LABEL.test(value);
}

/** A DNS-1123 subdomain: DNS labels joined by dots, at most 253 characters (Secret, Service and webhook names). */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && DNS_SUBDOMAIN.test(value);
}

/** A qualified name: alphanumerics, '-', '_' and '.', alphanumeric at both ends, at most 63 characters. */
const QUALIFIED_NAME = /^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** The syntax of a qualified name (and of a label value), in words for messages. */
export const QUALIFIED_NAME_RULE = 'up to 63 letters, digits, "-", "_" or "." starting and ending alphanumeric';

export function isQualifiedName(value: string): boolean {
  return QUALIFIED_NAME.test(value);
}

/** A label or annotation key: `[prefix/]name`, the prefix a DNS subdomain, the name a qualified name. */
export function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash === -1) return isQualifiedName(key);
  return isDnsSubdomain(key.slice(0, slash)) && isQualifiedName(key.slice(slash + 1));
}

/** A label value: empty, or a qualified name. */
export function isLabelValue(value: string): boolean {
  return value === '' || isQualifiedName(value);
}
