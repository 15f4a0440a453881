/**
 * The order the mutate phase runs its steps in (README "Declared write sets"). A step that declares nothing
 * is a barrier, as the apiserver runs mutating webhooks: after every earlier step and before every later one.
 * A declared step runs after every earlier step whose `supplies` overlap what it reads or writes, after every
 * earlier step that reads what it writes, and after the steps it names in `dependsOn`; declared steps with no
 * such path between them share a level and run concurrently, each on the object as the level began, and
 * their changes are merged in chain order — the same object the chain's order would give.
 *
 * What cannot be ordered is a problem: a step that depends on itself or on a later step (a cycle against the
 * chain's order), on a step that is not a mutating step of the chain, or two steps whose `supplies` overlap
 * while nothing orders them (the same `order`, whose tie the chain breaks by name only). A step in a problem
 * runs as a barrier, so the chain stays correct while the problem is reported.
 */
import { didYouMean } from '../base/did-you-mean.js';
import type { Declarations } from './declarations.js';
import type { Step } from './step.js';

export interface PlanProblem {
  /** The steps concerned, the first one the step whose declaration is wrong. */
  readonly steps: readonly string[];
  /** The declaration that is wrong, in the first step. */
  readonly field: 'supplies' | 'dependsOn';
  readonly message: string;
}

export interface StepPlan {
  /** The steps in levels, each level in chain order; a level runs after the one before it. */
  readonly levels: readonly (readonly Step[])[];
  /** Whether any level holds more than one step (so reports say which level each step ran in). */
  readonly concurrent: boolean;
  readonly problems: readonly PlanProblem[];
}

/** Why `later` must run after `earlier` (both declared), or undefined when nothing orders them. */
function orderReason(earlier: Step, e: Declarations, later: Step, l: Declarations): string | undefined {
  if (l.after.includes(earlier.name)) return `${later.name} names ${earlier.name} in dependsOn`;
  const read = e.supplies.overlap(l.reads);
  if (read) return `${earlier.name} supplies ${read[0]}, which ${later.name} reads (${read[1]})`;
  const write = e.supplies.overlap(l.supplies);
  if (write) return `${earlier.name} and ${later.name} both supply ${write[0]} / ${write[1]}`;
  const antiRead = e.reads.overlap(l.supplies);
  if (antiRead) return `${earlier.name} reads ${antiRead[0]}, which ${later.name} supplies (${antiRead[1]})`;
  return undefined;
}

/** Problems of the declarations of `steps` (a phase's steps in chain order). */
function problemsOf(steps: readonly Step[]): PlanProblem[] {
  const problems: PlanProblem[] = [];
  const position = new Map(steps.map((s, i) => [s.name, i]));
  steps.forEach((step, i) => {
    const d = step.declarations;
    if (!d) return;
    for (const name of d.after) {
      const at = position.get(name);
      if (at === undefined) {
        problems.push({
          steps: [step.name],
          field: 'dependsOn',
          message: `${step.name}: dependsOn names "${name}", which is not a mutating step of the chain${didYouMean(name, position.keys())}`,
        });
      } else if (at >= i) {
        problems.push({
          steps: [step.name, name],
          field: 'dependsOn',
          message:
            at === i
              ? `${step.name}: dependsOn names itself`
              : `${step.name}: dependsOn names ${name}, which runs after it in the chain (a cycle against the chain's order: move ${name} before ${step.name}, or drop the name)`,
        });
      }
    }
    for (let j = 0; j < i; j++) {
      const other = steps[j]!;
      const o = other.declarations;
      if (!o || other.order !== step.order || o.after.includes(step.name) || d.after.includes(other.name)) continue;
      const write = o.supplies.overlap(d.supplies);
      if (write) {
        problems.push({
          steps: [step.name, other.name],
          field: 'supplies',
          message: `${other.name} and ${step.name} both supply ${write[0]} / ${write[1]} and have the same order (${step.order}), so nothing says which writes first: give them different orders, or name one in the other's dependsOn`,
        });
      }
    }
  });
  return problems;
}

/**
 * The plan of a phase's steps (chain order). `demoted`: names whose declarations are set aside (they were
 * found wrong in the whole chain); a selection of the chain shares them.
 */
export function planSteps(steps: readonly Step[], demoted?: ReadonlySet<string>): StepPlan & { demoted: Set<string> } {
  const problems = demoted ? [] : problemsOf(steps);
  const aside = new Set(demoted ?? problems.flatMap((p) => p.steps));
  const declarationsOf = (step: Step): Declarations | undefined =>
    aside.has(step.name) ? undefined : step.declarations;

  // A level is a run of consecutive steps of the chain with no order between any two of them: a step that
  // must follow one of the current level starts the next. Everything the steps report then comes in chain
  // order, as it would serially: a denial is the first in the chain, warnings come in its order.
  const levels: Step[][] = [];
  let current: Step[] | undefined;
  for (const step of steps) {
    const d = declarationsOf(step);
    const joins =
      d !== undefined &&
      current !== undefined &&
      current.every((other) => {
        const o = declarationsOf(other);
        return o !== undefined && orderReason(other, o, step, d) === undefined;
      });
    if (joins) current!.push(step);
    else levels.push((current = [step]));
  }
  return {
    levels: levels.map((level) => Object.freeze(level)),
    concurrent: levels.some((level) => level.length > 1),
    problems,
    demoted: aside,
  };
}
