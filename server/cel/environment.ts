/**
 * The CEL environment: @marcbachmann/cel-js with the options and libraries the apiserver's base environment has
 * (optional types, homogeneous aggregate literals, the strings, lists, sets, regex, URL, IP, CIDR, quantity,
 * semver, format and JSON Patch libraries), and the variables an expression may read. Building one is slow (milliseconds),
 * so the base is built once and each set of declared variables once.
 */
import { Environment } from '@marcbachmann/cel-js';
import type { Override, Overrides } from './instrument.js';
import type { Library } from './library.js';
import { listsLibrary } from './lists.js';
import { optionalFieldsLibrary } from './optional-fields.js';
import { optionalsLibrary } from './optionals.js';
import { regexLibrary } from './regex.js';
import { setsLibrary } from './sets.js';
import { stringsLibrary } from './strings.js';
import { quantityLibrary } from './quantity.js';
import { ipLibrary } from './ip.js';
import { urlLibrary } from './urls.js';
import { semverLibrary } from './semver.js';
import { formatLibrary } from './format.js';
import { jsonPatchLibrary } from './jsonpatch.js';

/** The top-level variables an expression may be given, as the apiserver names them. */
export const DECLARATIONS = ['object', 'oldObject', 'request', 'params', 'namespaceObject'] as const;
export type Declaration = (typeof DECLARATIONS)[number];

/** The longest expression accepted, in characters (cel-go's default `ParserExpressionSizeLimit`, code points). */
export const MAX_EXPRESSION_LENGTH = 100_000;

const LIBRARIES: readonly Library[] = [
  optionalsLibrary,
  optionalFieldsLibrary,
  stringsLibrary,
  listsLibrary,
  setsLibrary,
  regexLibrary,
  urlLibrary,
  ipLibrary,
  quantityLibrary,
  semverLibrary,
  formatLibrary,
  jsonPatchLibrary,
];

/** The engine's functions the libraries implement instead (regex's `matches`). */
export const OVERRIDES: Overrides = new Map<string, Override>(LIBRARIES.flatMap((lib) => lib.overrides ?? []));

let base: Environment | undefined;

/**
 * A new environment with the libraries and no variables. The apiserver's options unless `overrides` says
 * otherwise (the cel-spec conformance test allows mixed-type literals, as plain CEL does).
 */
export function newEnvironment(overrides: { homogeneousAggregateLiterals?: boolean } = {}): Environment {
  const env = new Environment({
    enableOptionalTypes: true,
    homogeneousAggregateLiterals: overrides.homogeneousAggregateLiterals ?? true,
    limits: { maxAstNodes: 10_000, maxDepth: 250 },
  });
  for (const lib of LIBRARIES) for (const [name, ctor] of lib.types ?? []) env.registerType(name, ctor);
  for (const lib of LIBRARIES)
    for (const [name, type, value] of lib.constants ?? []) env.registerConstant(name, type, value);
  for (const lib of LIBRARIES) {
    for (const [signature, handler] of lib.functions) env.registerFunction(signature, handler, { async: false });
    for (const [signature, handler] of lib.operators ?? []) env.registerOperator(signature, handler);
  }
  return env;
}

function baseEnvironment(): Environment {
  return (base ??= newEnvironment());
}

/** The values of a policy's `variables`: a field each, read lazily (evaluate.ts, `lazyVariables`). */
export class PolicyVariables {}

/** Environments kept by their declarations; a configuration has a few sets, and reloads must not add up. */
const MAX_ENVIRONMENTS = 64;
const environments = new Map<string, Environment>();

/**
 * The environment with `declarations` and, when `variables` is given, `variables` with one field per name
 * (reading any other name is a compile error, as in the apiserver).
 */
export function environmentFor(declarations: readonly Declaration[], variables?: readonly string[]): Environment {
  const key = `${[...declarations].sort().join(',')}|${variables === undefined ? '-' : [...variables].sort().join(',')}`;
  const known = environments.get(key);
  if (known !== undefined) return known;
  const env = baseEnvironment().clone();
  for (const name of declarations) env.registerVariable(name, 'dyn');
  if (variables !== undefined) {
    env.registerType('PolicyVariables', {
      ctor: PolicyVariables,
      fields: Object.fromEntries(variables.map((name) => [name, 'dyn'])),
    });
    env.registerVariable('variables', 'PolicyVariables');
  }
  if (environments.size >= MAX_ENVIRONMENTS) environments.delete(environments.keys().next().value as string);
  environments.set(key, env);
  return env;
}
