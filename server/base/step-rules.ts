/**
 * The rules a step's name, time and declarations follow wherever they are written: read from gateway.yaml,
 * AdmissionProviders and discovery documents (config/, providers/), and stated as JSON Schema in the
 * protocol's OpenAPI document (protocol/). One place, so the reader and the schema cannot drift apart.
 */

/** The longest DNS-1123 label, and so the longest step name. */
export const MAX_DNS_LABEL_CHARS = 63;
/** A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends. */
export const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/** A step's time: at most the apiserver's own limit for a webhook's timeoutSeconds. */
export const MIN_TIMEOUT_SECONDS = 0.001;
export const MAX_TIMEOUT_SECONDS = 30;

/** A JSON pointer below the root: `/` then segments, `~` only in `~0` and `~1` (`*` as a segment is literal). */
export const JSON_POINTER_PATTERN = '^/([^~]|~[01])+$';
/** How many pointers or names one `supplies` or `dependsOn` list may hold, and how long one may be. */
export const MAX_DECLARED_PATHS = 64;
export const MAX_DECLARED_PATH_CHARS = 512;
