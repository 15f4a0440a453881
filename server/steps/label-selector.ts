/** Kubernetes label selectors (apimachinery labels.Selector semantics), compiled once at chain build. */
import type { LabelSelector } from '../admission/types.js';

export type Labels = Readonly<Record<string, string>>;
export type LabelPredicate = (labels: Labels) => boolean;

/** An absent or empty selector matches everything (as in a webhook configuration). */
export function isEmptySelector(selector: LabelSelector | undefined): boolean {
  return (
    !selector ||
    (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0)
  );
}

export function compileSelector(selector: LabelSelector | undefined): LabelPredicate {
  if (!selector || isEmptySelector(selector)) return () => true;
  const tests: LabelPredicate[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    tests.push((labels) => Object.hasOwn(labels, key) && labels[key] === value);
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const set = new Set(values);
    switch (operator) {
      case 'In':
        tests.push((labels) => Object.hasOwn(labels, key) && set.has(labels[key]!));
        break;
      case 'NotIn':
        tests.push((labels) => !Object.hasOwn(labels, key) || !set.has(labels[key]!));
        break;
      case 'Exists':
        tests.push((labels) => Object.hasOwn(labels, key));
        break;
      case 'DoesNotExist':
        tests.push((labels) => !Object.hasOwn(labels, key));
        break;
    }
  }
  return (labels) => tests.every((t) => t(labels));
}
