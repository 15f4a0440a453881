/**
 * Parses the apiserver's `?timeout=` query parameter: a Go duration such as `10s`, `1m30s` or `500ms`.
 * Returns milliseconds, or undefined when absent or unreadable (the default timeout then applies).
 */
const UNIT_MS: Readonly<Record<string, number>> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  ns: 1e-6,
};
const PART = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/y;

export function parseTimeoutParam(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < value.length) {
    const start = PART.lastIndex;
    const m = PART.exec(value);
    if (!m || m.index !== start) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return total > 0 ? total : undefined;
}
