/**
 * Warnings and audit annotations of one review, merged within the apiserver's limits.
 * Warnings: de-duplicated, control characters removed, prefixed with the step name; when their total
 * exceeds 4096 characters each is cut to 256, as k8s.io/apiserver/pkg/endpoints/filters/warning.go does
 * (and the total stays bounded). Audit annotation keys are `<step>.<key>`: a qualified name without `/`,
 * because the apiserver prefixes them with `<webhook name>/`.
 * What a step adds itself (a plugin's ctx.warn / ctx.annotate, a provider's answer) is capped per step, so
 * a provider answering with a hundred thousand annotations costs nothing more than one with twenty; the
 * gateway's own notes about a step (failed open, would deny, patch conflict) are always kept.
 */
import { isQualifiedName } from '../config/names.js';
import { clip, stripControl } from '../base/limits.js';

const TOTAL_RUNES = 4096;
const ITEM_RUNES = 256;
const MAX_ANNOTATION_VALUE = 4096;
/**
 * Warnings, and audit annotations, a step may add of its own: the apiserver allows a
 * ValidatingAdmissionPolicy 20 audit annotations, and 20 warnings already fill the 4096-character total.
 */
export const MAX_STEP_NOTES = 20;

/** Annotation keys worked out, by step and key ('' for none); at most MAX_KNOWN_KEYS in all. */
const KEYS = new Map<string, Map<string, string>>();
let knownKeys = 0;
const MAX_KNOWN_KEYS = 1024;
const MAX_KNOWN_KEY_CHARS = 128;

const runes = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};
const cutRunes = (s: string, max: number): string => (runes(s) <= max ? s : Array.from(s).slice(0, max).join(''));

/** The audit annotation key for `key` of `step`, or undefined when it cannot be made a qualified name. */
export function annotationKey(step: string, key: string): string | undefined {
  // The gateway's own notes give the same keys on every review they are given (a step failing open behind an
  // open breaker): each is worked out once, found by step then key without joining them. Bounded in keys and
  // their length: the memo starts again when full.
  const known = KEYS.get(step)?.get(key);
  if (known !== undefined) return known || undefined;
  const qualified = `${step}.${key}`.replace(/[^-A-Za-z0-9_.]/g, '-').slice(0, 63);
  const made = isQualifiedName(qualified) ? qualified : undefined;
  if (step.length + key.length <= MAX_KNOWN_KEY_CHARS) {
    if (++knownKeys > MAX_KNOWN_KEYS) {
      KEYS.clear();
      knownKeys = 1;
    }
    let ofStep = KEYS.get(step);
    if (!ofStep) KEYS.set(step, (ofStep = new Map<string, string>()));
    ofStep.set(key, made ?? '');
  }
  return made;
}

/** How many notes of its own a step added, and dropped over the limit. */
interface StepNoteCount {
  warnings: number;
  annotations: number;
  droppedWarnings: number;
  droppedAnnotations: number;
}

/** Where a step's own warnings and audit annotations go while it runs. */
export interface StepNotes {
  /** `asWritten`: the text or key as the step wrote it, without the step's name (a Step's `ownWords`). */
  stepWarn(step: string, text: string, asWritten?: boolean): void;
  stepAnnotate(step: string, key: string, value: string, asWritten?: boolean): void;
}

export class ReviewNotes implements StepNotes {
  private readonly warningSet = new Set<string>();
  private annotationMap: Record<string, string> | undefined;
  private counts: Map<string, StepNoteCount> | undefined;

  /** A warning of the gateway's about `step` (`asWritten`: without the step's name in front). */
  warn(step: string, text: string, asWritten = false): void {
    // Cut before cleaning: a warning longer than the whole total could never be shown anyway.
    const clean = stripControl(clip(String(text), TOTAL_RUNES));
    if (clean) this.warningSet.add(asWritten ? clean : `${step}: ${clean}`);
  }

  /**
   * An audit annotation of the gateway's about `step`. `asWritten`: the key as it is, when it is a qualified name
   * without `/` (the apiserver puts the webhook's name and a `/` in front), and the first value a key got stays.
   */
  annotate(step: string, key: string, value: string, asWritten = false): void {
    const qualified = asWritten
      ? isQualifiedName(key) && !key.includes('/')
        ? key
        : undefined
      : annotationKey(step, key);
    if (!qualified) return;
    this.annotationMap ??= {};
    if (asWritten && qualified in this.annotationMap) return;
    this.annotationMap[qualified] = String(value).slice(0, MAX_ANNOTATION_VALUE);
  }

  /** A warning the step added itself: kept within the step's limit. */
  stepWarn(step: string, text: string, asWritten = false): void {
    const count = this.countOf(step);
    if (count.warnings >= MAX_STEP_NOTES) count.droppedWarnings++;
    else {
      count.warnings++;
      this.warn(step, text, asWritten);
    }
  }

  /** An audit annotation the step added itself: kept within the step's limit. */
  stepAnnotate(step: string, key: string, value: string, asWritten = false): void {
    const count = this.countOf(step);
    if (count.annotations >= MAX_STEP_NOTES) count.droppedAnnotations++;
    else {
      count.annotations++;
      this.annotate(step, String(key).slice(0, 2 * ITEM_RUNES), value, asWritten);
    }
  }

  /** Counts notes a step added over its limit before they reached the review (HeldNotes). */
  stepDropped(step: string, warnings: number, annotations: number): void {
    if (warnings === 0 && annotations === 0) return;
    const count = this.countOf(step);
    count.droppedWarnings += warnings;
    count.droppedAnnotations += annotations;
  }

  /** What each step had dropped over its limit, when any did. */
  dropped(): Record<string, { warnings: number; annotations: number }> | undefined {
    let dropped: Record<string, { warnings: number; annotations: number }> | undefined;
    this.counts?.forEach((count, step) => {
      if (count.droppedWarnings || count.droppedAnnotations) {
        (dropped ??= {})[step] = { warnings: count.droppedWarnings, annotations: count.droppedAnnotations };
      }
    });
    return dropped;
  }

  private countOf(step: string): StepNoteCount {
    this.counts ??= new Map();
    let count = this.counts.get(step);
    if (!count) {
      count = { warnings: 0, annotations: 0, droppedWarnings: 0, droppedAnnotations: 0 };
      this.counts.set(step, count);
    }
    return count;
  }

  warnings(): string[] | undefined {
    if (this.warningSet.size === 0) return undefined;
    const all = [...this.warningSet];
    // A string has no more runes than UTF-16 units: counting them is needed only when the units are over.
    if (all.reduce((n, w) => n + w.length, 0) <= TOTAL_RUNES) return all;
    if (all.reduce((n, w) => n + runes(w), 0) <= TOTAL_RUNES) return all;
    const out: string[] = [];
    let total = 0;
    for (const w of all) {
      const cut = cutRunes(w, ITEM_RUNES);
      total += runes(cut);
      if (total > TOTAL_RUNES) break;
      out.push(cut);
    }
    return out;
  }

  /** The audit annotations, with one `<step>.notes-dropped` saying what a step had dropped over its limit. */
  annotations(): Record<string, string> | undefined {
    const dropped = this.dropped();
    for (const [step, { warnings, annotations }] of Object.entries(dropped ?? {})) {
      this.annotate(
        step,
        'notes-dropped',
        `${warnings} warnings and ${annotations} audit annotations over the limit of ${MAX_STEP_NOTES} each were dropped`,
      );
    }
    return this.annotationMap;
  }
}
