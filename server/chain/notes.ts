/**
 * Warnings and audit annotations of one review, merged within the apiserver's limits.
 * Warnings: de-duplicated, control characters removed, prefixed with the step name; when their total
 * exceeds 4096 characters each is cut to 256, as k8s.io/apiserver/pkg/endpoints/filters/warning.go does
 * (and the total stays bounded). Audit annotation keys are `<step>.<key>`: a qualified name without `/`,
 * because the apiserver prefixes them with `<webhook name>/`.
 */
const TOTAL_RUNES = 4096;
const ITEM_RUNES = 256;
const MAX_ANNOTATION_VALUE = 4096;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

const runes = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};
const cutRunes = (s: string, max: number): string => (runes(s) <= max ? s : Array.from(s).slice(0, max).join(''));

/** The audit annotation key for `key` of `step`, or undefined when it cannot be made a qualified name. */
export function annotationKey(step: string, key: string): string | undefined {
  const qualified = `${step}.${key}`.replace(/[^-A-Za-z0-9_.]/g, '-').slice(0, 63);
  return QUALIFIED_NAME.test(qualified) ? qualified : undefined;
}

export class ReviewNotes {
  private readonly warningSet = new Set<string>();
  private annotationMap: Record<string, string> | undefined;

  warn(step: string, text: string): void {
    const clean = String(text).replace(CONTROL, ' ').replace(/ {2,}/g, ' ').trim();
    if (clean) this.warningSet.add(`${step}: ${clean}`);
  }

  annotate(step: string, key: string, value: string): void {
    const qualified = annotationKey(step, key);
    if (!qualified) return;
    (this.annotationMap ??= {})[qualified] = String(value).slice(0, MAX_ANNOTATION_VALUE);
  }

  warnings(): string[] | undefined {
    if (this.warningSet.size === 0) return undefined;
    const all = [...this.warningSet];
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

  annotations(): Record<string, string> | undefined {
    return this.annotationMap;
  }
}
