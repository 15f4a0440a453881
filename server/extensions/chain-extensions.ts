/**
 * The chain's extensions (README "Opt-in providers"): its entries as `admissiongateway.io/extensions` names
 * them, each with its admission steps, its `attach` and its conflict group. Built once with each chain, off
 * the request path, so a review that reads references looks each name up once.
 */
import type { AuthorizeStep } from '../authorization/authorize-step.js';
import type { Attach } from '../config/types.js';
import type { Step } from '../steps/step.js';

export interface ChainExtension {
  readonly name: string;
  readonly attach: Attach;
  readonly conflictGroup: string | undefined;
  /** Where its first step stands in the chain: the order `extensions-applied` lists extensions in. */
  readonly position: number;
  /** Its admission steps, both phases, in chain order. */
  readonly steps: readonly Step[];
  /** Whether it has a mutate step (its reviews are then counted in the mutate phase). */
  readonly mutates: boolean;
  /** Whether a step of it has a namespaceSelector (telling whether it applies needs the namespace's labels). */
  readonly needsNamespaceLabels: boolean;
}

export interface ChainExtensions {
  /** The extension named `name`, if the chain has admission steps of that name. */
  get(name: string): ChainExtension | undefined;
  /** Every extension's name (for "did you mean"). */
  readonly names: readonly string[];
  /** Entries with authorize steps only: referenced, they take part in no admission phase. */
  readonly authorizeOnly: ReadonlySet<string>;
  /**
   * Some step is `OptIn` or in a conflict group: reviews read the namespace's references too. Without, a chain
   * costs a review nothing more than one annotation read.
   */
  readonly usesReferences: boolean;
  /** Some mutate step is `OptIn`: the mutate phase keeps `admissiongateway.io/extensions-applied`. */
  readonly optInMutates: boolean;
  /** Some extension needs the namespace's labels to tell whether it applies. */
  readonly needsNamespaceLabels: boolean;
}

/** The extensions of `ordered` (a chain's steps in order) and of its authorize steps. */
export function indexExtensions(ordered: readonly Step[], authorize: readonly AuthorizeStep[]): ChainExtensions {
  const byName = new Map<string, { first: Step; steps: Step[]; position: number }>();
  ordered.forEach((step, position) => {
    const found = byName.get(step.extension);
    if (found) found.steps.push(step);
    else byName.set(step.extension, { first: step, steps: [step], position });
  });
  const extensions = new Map<string, ChainExtension>();
  for (const [name, { first, steps, position }] of byName) {
    extensions.set(name, {
      name,
      attach: first.attach,
      conflictGroup: first.conflictGroup,
      position,
      steps,
      mutates: steps.some((s) => s.phase === 'mutate'),
      needsNamespaceLabels: steps.some((s) => s.match.needsNamespaceLabels),
    });
  }
  const authorizeOnly = new Set(authorize.map((s) => s.name).filter((name) => !extensions.has(name)));
  return {
    get: (name) => extensions.get(name),
    names: [...extensions.keys(), ...authorizeOnly],
    authorizeOnly,
    usesReferences: ordered.some((s) => s.attach === 'OptIn' || s.conflictGroup !== undefined),
    optInMutates: ordered.some((s) => s.attach === 'OptIn' && s.phase === 'mutate'),
    needsNamespaceLabels: ordered.some((s) => s.match.needsNamespaceLabels),
  };
}
