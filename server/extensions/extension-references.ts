/**
 * Opt-in extensions (README, "Opt-in providers"): a chain entry with `attach: OptIn` runs only for a request
 * whose object, or whose namespace, names it in the annotation `admissiongateway.io/extensions` — a
 * comma-separated list of entry names. The annotation is anyone's to write who can create the object, so
 * what is read from it is bounded and checked here, once, for the request path and the namespace cache alike.
 */
import { isDnsLabel } from '../config/names.js';

/** Where an object or a Namespace names the opt-in extensions it wants. */
export const EXTENSIONS_ANNOTATION = 'admissiongateway.io/extensions';
/** Set by the mutating answer: the opt-in extensions that ran for the object as stored. */
export const EXTENSIONS_APPLIED_ANNOTATION = 'admissiongateway.io/extensions-applied';
/** Names one annotation may hold; the rest are reported, not read. */
export const MAX_EXTENSION_REFERENCES = 16;
/** Characters of the annotation read at most (16 names of 63 characters and their commas fit). */
export const MAX_EXTENSIONS_ANNOTATION_CHARS = 1024;

export interface ExtensionReferences {
  /** The names referenced, in the order written, duplicates dropped: each a DNS-1123 label. */
  readonly names: readonly string[];
  /** What could not be read as a name, clipped: to warn about, never to act on. */
  readonly invalid: readonly string[];
}

export const NO_REFERENCES: ExtensionReferences = Object.freeze({ names: [], invalid: [] });

/** The references in an annotation's value (absent, empty or not a string: none). */
export function parseExtensionReferences(value: unknown): ExtensionReferences {
  if (typeof value !== 'string' || value.trim() === '') return NO_REFERENCES;
  const text = value.length > MAX_EXTENSIONS_ANNOTATION_CHARS ? value.slice(0, MAX_EXTENSIONS_ANNOTATION_CHARS) : value;
  const names: string[] = [];
  const invalid: string[] = [];
  for (const raw of text.split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    if (!isDnsLabel(name)) invalid.push(name.length > 64 ? `${name.slice(0, 63)}…` : name);
    else if (!names.includes(name)) {
      if (names.length < MAX_EXTENSION_REFERENCES) names.push(name);
      else invalid.push(name);
    }
  }
  if (value.length > MAX_EXTENSIONS_ANNOTATION_CHARS) invalid.push(`(${value.length - text.length} more characters)`);
  return { names, invalid };
}
