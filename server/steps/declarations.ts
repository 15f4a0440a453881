/** What a step declares it writes, reads and runs after (`supplies`, `dependsOn`), compiled for the plan. */
import { isPointerPattern, type StepDeclarations } from '../config/step-declarations.js';
import { WriteSet } from './write-set.js';

/** What a step declares, compiled. */
export interface Declarations {
  /** What it writes; a write outside fails the step. */
  readonly supplies: WriteSet;
  /** What it reads. */
  readonly reads: WriteSet;
  /** The names of steps it runs after. */
  readonly after: readonly string[];
}

/** The declarations as written, compiled; undefined for a step that declares neither list. */
export function compileDeclarations(declared: StepDeclarations | undefined): Declarations | undefined {
  if (declared?.supplies === undefined && declared?.dependsOn === undefined) return undefined;
  const dependsOn = declared.dependsOn ?? [];
  return {
    supplies: new WriteSet(declared.supplies ?? []),
    reads: new WriteSet(dependsOn.filter(isPointerPattern)),
    after: dependsOn.filter((item) => !isPointerPattern(item)),
  };
}

/** A step placement's declaration fields: compiled for the plan, as written for `/chain`. */
export function declarationFields(declared: StepDeclarations): {
  declarations?: Declarations;
  declared?: StepDeclarations;
} {
  const declarations = compileDeclarations(declared);
  if (!declarations) return {};
  const { supplies, dependsOn } = declared;
  return {
    declarations,
    declared: { ...(supplies ? { supplies } : {}), ...(dependsOn ? { dependsOn } : {}) },
  };
}
