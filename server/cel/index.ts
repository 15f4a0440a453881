/** CEL for the gateway's expressions: compile once when the configuration loads, evaluate per review, bounded. */
export { compile } from './compile.js';
export type { CelProgram, CompileError, CompileOptions, CompileResult } from './compile.js';
export { activation, evaluate, evaluatedVariables, lazyVariables, VariableError, withVariables } from './evaluate.js';
export type { Activation, EvalResult } from './evaluate.js';
export { createCostBudget, PER_EXPRESSION_COST_LIMIT, PER_REVIEW_COST_LIMIT } from './cost.js';
export type { CostBudget } from './cost.js';
export { DECLARATIONS, MAX_EXPRESSION_LENGTH, PolicyVariables } from './environment.js';
export type { Declaration } from './environment.js';
export type { Position } from './position.js';
export { CelValueError, MAX_VALUE_DEPTH, toCel, toJson } from './values.js';
export { MAX_PREVIEW_CHARS, previewValue } from './preview.js';
