/**
 * `admissiongateway.io/extensions-applied` (README "Opt-in providers"): what was applied is visible on the
 * object. After the mutate phase's steps, the gateway sets the annotation to the `OptIn` extensions whose
 * mutate steps ran for this review without failing (some step of theirs approved), in chain order, and to
 * those the stored object already listed that it still references (applied by an earlier write, with nothing
 * to do in this one: an injector of CREATEs on a later UPDATE); a value naming nothing else is removed. It is
 * the gateway's own write, made after every step and reinvocation: no step's, so it counts as no patch
 * conflict, falls under no declared write set and reinvokes nothing. Validating extensions never touch the
 * object and are not listed.
 */
import type { KubeObject } from '../admission/types.js';
import { trackObject } from '../patch/tracked-object.js';
import { WorkingCopy } from '../patch/working-copy.js';
import type { WriteHistory } from '../patch/write-history.js';
import type { WrittenPaths } from '../patch/written-paths.js';
import type { ChainExtensions } from '../extensions/chain-extensions.js';
import { EXTENSIONS_APPLIED_ANNOTATION, parseExtensionReferences } from '../extensions/extension-references.js';
import { effectiveFailurePolicy } from '../steps/policy.js';
import type { ReviewContext } from './review-context.js';
import type { ReviewExtensions } from '../extensions/review-references.js';
import { isPatchable } from '../steps/skip-reasons.js';
import type { Step } from '../steps/step.js';

/** Who the written paths say wrote the annotation (never a step's name: those are DNS labels). */
const WRITER = 'admission-gateway/extensions-applied';

type JsonMap = Record<string, unknown>;

const isMap = (value: unknown): value is JsonMap =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The annotation's value on `object`, if it has one. */
function currentValue(object: KubeObject): unknown {
  const annotations = object.metadata?.annotations;
  return isMap(annotations) ? annotations[EXTENSIONS_APPLIED_ANNOTATION] : undefined;
}

/** What the annotation's values and the review bring to its next value. */
export interface AppliedSources {
  /** The extensions whose mutate steps approved in this review (this route's). */
  readonly approved: ReadonlySet<string>;
  /** The extensions the review references (review-references.ts). */
  readonly referenced: ReadonlySet<string>;
  /** The value on the stored object (an UPDATE's old object): what earlier writes applied. None on CREATE. */
  readonly stored: unknown;
  /** The value on the object in hand: what another half of a split phase wrote moments ago. */
  readonly current: unknown;
}

/**
 * What the annotation says after this review, in chain order; undefined for nothing. A route answers for its
 * own `OptIn` mutators: those that approved now, and those the stored object listed that are still referenced.
 * A route that runs one half of the phase (`/mutate/fail`, `/mutate/ignore`) keeps what the object in hand lists
 * of the other half's, still referenced. A name the client wrote itself on a CREATE is never kept.
 */
export function appliedValue(
  chain: ChainExtensions,
  route: ReviewExtensions['failurePolicy'],
  sources: AppliedSources,
): string | undefined {
  const names = new Set(sources.approved);
  const onThisRoute = (step: Step) => route === undefined || effectiveFailurePolicy(step) === route;
  /** A referenced `OptIn` extension with a mutate step `where` says. */
  const mutator = (name: string, where: (step: Step) => boolean) =>
    sources.referenced.has(name) &&
    !!chain.get(name)?.steps.some((s) => s.attach === 'OptIn' && s.phase === 'mutate' && where(s));
  for (const name of parseExtensionReferences(sources.stored).names) {
    if (mutator(name, onThisRoute)) names.add(name);
  }
  if (route !== undefined) {
    for (const name of parseExtensionReferences(sources.current).names) {
      if (mutator(name, (step) => !onThisRoute(step))) names.add(name);
    }
  }
  if (names.size === 0) return undefined;
  const position = (name: string) => chain.get(name)?.position ?? Number.MAX_SAFE_INTEGER;
  return [...names].sort((a, b) => position(a) - position(b)).join(',');
}

/**
 * Sets the annotation on the working copy to `value` (removes it for undefined) when it says something else,
 * and records the write for the phase's diff under no step's name. Returns the working copy when it wrote
 * (made from `original` when the phase had none yet), else undefined. An object whose metadata or annotations
 * are not maps (no apiserver sends one) is left alone.
 */
export function writeApplied(
  original: KubeObject,
  working: WorkingCopy<KubeObject> | undefined,
  written: WrittenPaths,
  value: string | undefined,
  history?: WriteHistory,
): WorkingCopy<KubeObject> | undefined {
  const object = working?.root ?? original;
  if (currentValue(object) === value) return undefined;
  if (object.metadata !== undefined && object.metadata !== null && !isMap(object.metadata)) return undefined;
  const annotations = object.metadata?.annotations;
  if (annotations !== undefined && annotations !== null && !isMap(annotations)) return undefined;

  const copy = working ?? new WorkingCopy(original);
  const session = trackObject(copy, WRITER);
  const view = session.view as JsonMap;
  if (!isMap(view.metadata)) view.metadata = {};
  const metadata = view.metadata as JsonMap;
  if (value === undefined) {
    delete (metadata.annotations as JsonMap)[EXTENSIONS_APPLIED_ANNOTATION];
  } else {
    if (!isMap(metadata.annotations)) metadata.annotations = {};
    (metadata.annotations as JsonMap)[EXTENSIONS_APPLIED_ANNOTATION] = value;
  }
  session.close();
  session.forEachWrite((place, key) => written.recordAt(place, key, WRITER));
  history?.add(session);
  return copy;
}

/**
 * After the mutate phase's steps: the annotation made to say what this review applied, when the chain has
 * `OptIn` mutators and the request writes the object itself (CREATE or UPDATE; not a subresource such as a
 * status update, which no extension applied anything to). Returns the working copy when it changed it.
 */
export function stampExtensionsApplied(
  ctx: ReviewContext,
  working: WorkingCopy<KubeObject> | undefined,
  written: WrittenPaths,
  history?: WriteHistory,
): WorkingCopy<KubeObject> | undefined {
  const { request, extensions } = ctx;
  if (!extensions?.chain.optInMutates || !isPatchable(request) || request.subResource) return undefined;
  const object = request.object!;
  const value = appliedValue(extensions.chain, extensions.failurePolicy, {
    approved: ctx.observer.approvedOptIn(),
    referenced: extensions.referenced,
    stored: request.operation === 'UPDATE' && request.oldObject ? currentValue(request.oldObject) : undefined,
    current: currentValue(working?.root ?? object),
  });
  return writeApplied(object, working, written, value, history);
}
