/**
 * The opt-in extensions one review references (README "Opt-in providers"): the object's annotation
 * `admissiongateway.io/extensions` (its old object's when there is no new one, as on DELETE) and its
 * namespace's, resolved against the chain. What comes out: the extensions whose `OptIn` steps run, those set
 * aside, a refusal when one source names two entries of a conflict group, and what to tell the user about
 * references that do nothing — never a silent no-op.
 *
 * Everything here is bounded by what the parser reads (16 names a source) and by the chain's size; names
 * are looked up in the chain's index, and the costly "did you mean" only for the first few unknown ones.
 */
import type { Denial } from '../admission/decision.js';
import type { AdmissionRequest } from '../admission/types.js';
import { didYouMean } from '../base/did-you-mean.js';
import { clip } from '../base/limits.js';
import type { FailurePolicy } from '../config/step-options.js';
import type { ChainExtension, ChainExtensions } from './chain-extensions.js';
import {
  EXTENSIONS_ANNOTATION,
  MAX_EXTENSION_REFERENCES,
  NO_REFERENCES,
  parseExtensionReferences,
  type ExtensionReferences,
} from './extension-references.js';
import type { Labels } from '../steps/label-selector.js';
import {
  NAMESPACE_SELECTOR_DOES_NOT_MATCH,
  OBJECT_SELECTOR_DOES_NOT_MATCH,
  RULES_DO_NOT_MATCH,
  isNamespaceResource,
} from '../steps/match.js';
import { DRY_RUN_WITH_SIDE_EFFECTS, mutatesNothing } from '../steps/skip-reasons.js';

/** What the review's phase knows of its references (ReviewContext.extensions). */
export interface ReviewExtensions {
  readonly chain: ChainExtensions;
  /** The route's failure policy when it runs one half of a phase (extensions-applied.ts). */
  readonly failurePolicy: FailurePolicy | undefined;
  /** The extensions referenced, the object's and its namespace's: their `OptIn` steps run. */
  readonly referenced: ReadonlySet<string>;
  /** Referenced extensions whose `OptIn` steps do not run after all, with the reason (skip.ts). */
  readonly setAside: ReadonlyMap<string, string>;
}

/** Where the references come from. */
export interface ReferenceSources {
  readonly object: ExtensionReferences;
  /**
   * What the request does not write of them: on an UPDATE, the old object's references (undefined: none); on a
   * DELETE or CONNECT, all of them.
   */
  readonly unchanged?: ExtensionReferences | undefined;
  /** The namespace whose references `namespace` holds: none for a cluster-scoped object or a Namespace. */
  readonly namespaceName: string | undefined;
  readonly namespace: ExtensionReferences;
}

export interface ResolvedReferences {
  readonly referenced: ReadonlySet<string>;
  readonly setAside: ReadonlyMap<string, string>;
  /** One source names two entries of a conflict group on a write: the review is refused with this. */
  readonly refusal: Denial | undefined;
  /** For the user, each to be prefixed with the annotation's name (computed only when asked for). */
  readonly warnings: readonly string[];
}

/** Unknown names a source gets a warning of its own for (with "did you mean"); the rest are counted. */
const NAMED_UNKNOWN = 4;
/** Unreadable items a warning quotes. */
const QUOTED_INVALID = 5;

/** The annotation's value on the object, or on the old object when there is no object (DELETE). */
export function objectReferenceValue(request: AdmissionRequest): unknown {
  const object = request.object ?? request.oldObject;
  const annotations = object?.metadata?.annotations;
  return annotations ? annotations[EXTENSIONS_ANNOTATION] : undefined;
}

/**
 * The namespace whose references count for the request: its namespace, but none for a Namespace (its own
 * annotation is the object's) or a cluster-scoped object.
 */
export function namespaceOfReferences(request: AdmissionRequest): string | undefined {
  return isNamespaceResource(request) ? undefined : request.namespace || undefined;
}

/** The object's references, parsed (none when the annotation is absent). */
export function objectReferences(value: unknown): ExtensionReferences {
  return value === undefined ? NO_REFERENCES : parseExtensionReferences(value);
}

const operationAndResource = (request: AdmissionRequest): string => {
  const { group, version, resource } = request.resource;
  const sub = request.subResource ? `/${request.subResource}` : '';
  return clip(`${request.operation} of ${group ? `${group}/` : ''}${version} ${resource}${sub}`, 128);
};

/** A step's reason not to run, in words for the user. */
function inWords(reason: string, request: AdmissionRequest): string {
  switch (reason) {
    case RULES_DO_NOT_MATCH:
      return `its rules do not select ${operationAndResource(request)}`;
    case NAMESPACE_SELECTOR_DOES_NOT_MATCH:
      return `its namespaceSelector does not select namespace "${clip(request.namespace ?? '', 64)}"`;
    case OBJECT_SELECTOR_DOES_NOT_MATCH:
      return "its objectSelector does not select the object's labels";
    case DRY_RUN_WITH_SIDE_EFFECTS:
      return 'it has side effects, and this request is a dry run';
    default:
      return reason;
  }
}

/**
 * Why none of the extension's steps (either phase) applies to the request, in words; undefined when one
 * does. The reasons of its steps, each once.
 */
export function whyNotApplies(
  extension: ChainExtension,
  request: AdmissionRequest,
  namespaceLabels: Labels | undefined,
): string | undefined {
  const reasons: string[] = [];
  for (const step of extension.steps) {
    const reason = step.match.matches(request, namespaceLabels);
    let words: string | undefined;
    if (reason) words = inWords(reason, request);
    else if (request.dryRun && step.sideEffects === 'Some') words = inWords(DRY_RUN_WITH_SIDE_EFFECTS, request);
    else if (mutatesNothing(step, request)) words = `it edits the object, and a ${request.operation} has none to edit`;
    else return undefined;
    if (!reasons.includes(words)) reasons.push(words);
  }
  return reasons.join('; ');
}

/** How a message names a source. */
const sourceName = (namespace: string | undefined): string =>
  namespace === undefined ? 'the object' : `namespace "${clip(namespace, 64)}"`;

/** The groups a source names two entries or more of: group → its entries, in the order named. */
function conflictsOf(extensions: readonly ChainExtension[]): Map<string, ChainExtension[]> {
  const byGroup = new Map<string, ChainExtension[]>();
  for (const extension of extensions) {
    const group = extension.conflictGroup;
    if (group === undefined) continue;
    const members = byGroup.get(group);
    if (members) members.push(extension);
    else byGroup.set(group, [extension]);
  }
  for (const [group, members] of byGroup) if (members.length < 2) byGroup.delete(group);
  return byGroup;
}

const quoted = (names: readonly ChainExtension[]): string =>
  names.length === 2 ? `"${names[0]!.name}" and "${names[1]!.name}"` : names.map((e) => `"${e.name}"`).join(', ');

/** An UPDATE of an object being deleted (a finalizer removed): refusing it would leave the object stuck. */
function isDeleting(request: AdmissionRequest): boolean {
  const metadata = request.object?.metadata;
  return typeof metadata === 'object' && metadata !== null && !!metadata.deletionTimestamp;
}

/**
 * Whether a conflict refuses the request: a CREATE or UPDATE, which sets the annotation. A DELETE, a CONNECT
 * and an object being deleted go through, so that a conflict can never keep an object from going away.
 */
function isWrite(request: AdmissionRequest): boolean {
  return (request.operation === 'CREATE' || request.operation === 'UPDATE') && !isDeleting(request);
}

export interface ResolveInput {
  readonly request: AdmissionRequest;
  readonly chain: ChainExtensions;
  readonly sources: ReferenceSources;
  /** The namespace's labels, for the steps' namespaceSelectors (undefined: not looked up, or none). */
  readonly namespaceLabels: Labels | undefined;
  /** Work out the warnings too (only the route that gives them does: reviewer.ts). */
  readonly warn: boolean;
}

/** The references of a review, resolved against the chain. */
export function resolveReferences(input: ResolveInput): ResolvedReferences {
  const { request, chain, sources, warn } = input;
  const warnings: string[] = [];
  const notApplying = new Map<ChainExtension, string | undefined>();
  const whyNot = (extension: ChainExtension): string | undefined => {
    if (!notApplying.has(extension)) {
      notApplying.set(extension, whyNotApplies(extension, request, input.namespaceLabels));
    }
    return notApplying.get(extension);
  };

  const objectSide = known(sources.object, chain);
  const namespaceSide = known(sources.namespace, chain);
  const objectGroups = new Map<string, ChainExtension>();
  for (const extension of objectSide) {
    if (extension.conflictGroup !== undefined && !objectGroups.has(extension.conflictGroup)) {
      objectGroups.set(extension.conflictGroup, extension);
    }
  }

  const referenced = new Set(objectSide.map((e) => e.name));
  const setAside = new Map<string, string>();
  // The object's choice in a conflict group wins over its namespace's: those are not applied.
  const fromNamespace: ChainExtension[] = [];
  for (const extension of namespaceSide) {
    const chosen = extension.conflictGroup === undefined ? undefined : objectGroups.get(extension.conflictGroup);
    if (chosen === undefined || referenced.has(extension.name)) {
      fromNamespace.push(extension);
      continue;
    }
    if (warn && whyNot(extension) === undefined) {
      warnings.push(
        `${sourceName(sources.namespaceName)} references "${extension.name}", which is not applied: the object ` +
          `references "${chosen.name}" of the same conflict group "${chosen.conflictGroup}", and the object's choice wins`,
      );
    }
  }
  for (const extension of fromNamespace) referenced.add(extension.name);

  const conflicts = [
    ...[...conflictsOf(objectSide).values()].map((members) => ({ source: undefined, members })),
    ...[...conflictsOf(fromNamespace).values()].map((members) => ({ source: sources.namespaceName, members })),
  ];
  const refusal = resolveConflicts(conflicts, { request, whyNot, warn, setAside, warnings });

  if (warn) {
    warnings.push(...unusable(sources.object, undefined, chain));
    warnings.push(...objectWarnings(objectSide, request, sources.unchanged, whyNot));
    // A namespace's references count for every object in it: that one of them does not apply to some kind of
    // object is no news, but a name that can never work is.
    warnings.push(...unusable(sources.namespace, sources.namespaceName, chain));
  }
  return { referenced, setAside, refusal, warnings };
}

/** What resolving conflicts works on: the review, and where it puts what it finds. */
interface ConflictContext {
  readonly request: AdmissionRequest;
  readonly whyNot: (extension: ChainExtension) => string | undefined;
  readonly warn: boolean;
  readonly setAside: Map<string, string>;
  readonly warnings: string[];
}

/**
 * Two entries (or more) of one group named by one source: the refusal of a write; otherwise (a DELETE, a
 * CONNECT, an object being deleted) none of them runs, with a warning — which one was meant is never guessed.
 * A conflict between entries none of which applies to the request changes nothing: nothing of theirs runs.
 */
function resolveConflicts(
  conflicts: ReadonlyArray<{ readonly source: string | undefined; readonly members: readonly ChainExtension[] }>,
  ctx: ConflictContext,
): Denial | undefined {
  const { request } = ctx;
  let refusal: Denial | undefined;
  for (const { source, members } of conflicts) {
    if (members.every((m) => ctx.whyNot(m) !== undefined)) continue;
    const group = members[0]!.conflictGroup!;
    if (isWrite(request)) {
      refusal ??= { allowed: false, code: 400, message: conflictMessage(source, members, group) };
      continue;
    }
    const reason = `conflict group "${group}": ${sourceName(source)} references ${quoted(members)}`;
    for (const member of members) ctx.setAside.set(member.name, reason);
    if (ctx.warn) {
      ctx.warnings.push(
        `${sourceName(source)} references ${quoted(members)}, both of conflict group "${group}": ` +
          `none of them runs for ${isDeleting(request) ? 'an object being deleted' : `a ${request.operation}`}`,
      );
    }
  }
  return refusal;
}

/**
 * The object's references that do not apply to the request, or change nothing (an `Always` entry's). Told when
 * the request writes them (a CREATE, or a name new in an UPDATE): not on every later UPDATE of the object (a
 * Pod's label changed, for an injector of CREATEs) nor on its DELETE.
 */
function objectWarnings(
  objectSide: readonly ChainExtension[],
  request: AdmissionRequest,
  unchanged: ExtensionReferences | undefined,
  whyNot: (extension: ChainExtension) => string | undefined,
): string[] {
  const written = (name: string) =>
    request.operation === 'CREATE' || (request.operation === 'UPDATE' && !unchanged?.names.includes(name));
  const out: string[] = [];
  for (const extension of objectSide) {
    if (!written(extension.name)) continue;
    const why = whyNot(extension);
    if (why !== undefined) {
      out.push(`the object references "${extension.name}", which does not apply to this request: ${why}`);
    } else if (extension.attach === 'Always') {
      out.push(
        `the object references "${extension.name}", which runs for every request it matches (attach: Always): ` +
          'the reference changes nothing',
      );
    }
  }
  return out;
}

/** The entries of the chain `references` names, in the order named. */
function known(references: ExtensionReferences, chain: ChainExtensions): ChainExtension[] {
  const found: ChainExtension[] = [];
  for (const name of references.names) {
    const extension = chain.get(name);
    if (extension) found.push(extension);
  }
  return found;
}

/** Warnings about what a source names that can never run: unreadable items, unknown names, authorize-only entries. */
function unusable(references: ExtensionReferences, namespace: string | undefined, chain: ChainExtensions): string[] {
  const out: string[] = [];
  const source = sourceName(namespace);
  if (references.invalid.length > 0) {
    const shown = references.invalid.slice(0, QUOTED_INVALID).map((item) => JSON.stringify(item));
    const more = references.invalid.length - shown.length;
    const annotation = namespace === undefined ? "the object's annotation" : `the annotation of ${source}`;
    const items = `${shown.join(', ')}${more > 0 ? ` (and ${more} more)` : ''}`;
    out.push(
      `${annotation} holds what cannot be read as entry names, ignored: ${items}; it is read as at most ` +
        `${MAX_EXTENSION_REFERENCES} comma-separated names of lower-case letters, digits and "-"`,
    );
  }
  let unknown = 0;
  for (const name of references.names) {
    if (chain.get(name)) continue;
    if (chain.authorizeOnly.has(name)) {
      out.push(`${source} references "${name}", which has no mutate or validate step: it takes part in no admission`);
      continue;
    }
    if (++unknown <= NAMED_UNKNOWN) {
      out.push(
        `${source} references "${name}", which is no entry of the gateway's chain${didYouMean(name, chain.names)}: ` +
          'nothing runs for it',
      );
    }
  }
  if (unknown > NAMED_UNKNOWN) {
    out.push(
      `${source} references ${unknown - NAMED_UNKNOWN} more names that are no entry of the gateway's chain: ` +
        'nothing runs for them',
    );
  }
  return out;
}

/** The refusal of a write whose source names two entries (or more) of one conflict group, and what to do. */
function conflictMessage(source: string | undefined, members: readonly ChainExtension[], group: string): string {
  const where =
    source === undefined
      ? `the object's annotation ${EXTENSIONS_ANNOTATION}`
      : `the annotation ${EXTENSIONS_ANNOTATION} of namespace "${clip(source, 64)}"`;
  const fix =
    source === undefined
      ? `keep one of them in the object's ${EXTENSIONS_ANNOTATION}`
      : `keep one of them in the namespace's ${EXTENSIONS_ANNOTATION}, or name the one to use in the object's own`;
  return (
    `${where} references ${quoted(members)}, both of conflict group "${group}", and one object may use only one ` +
    `entry of a conflict group: ${fix}`
  );
}
