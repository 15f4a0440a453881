/**
 * What the apiserver's CEL environment has and this one has not. An expression that uses any of it is refused
 * when it compiles, by name, rather than failing at review time (or, as the engine would say it, with an unknown
 * variable or "no matching overload").
 */

/** A call `name(...)` or `x.name(...)` with `arity` arguments (not counting the receiver) we do not provide. */
interface Missing {
  readonly name: string;
  readonly arity?: readonly number[];
  readonly why: string;
}

const TWO_VARIABLE = 'two-variable comprehensions (Kubernetes 1.32) are not supported by this CEL engine';

const MISSING: readonly Missing[] = [
  { name: 'all', arity: [3], why: TWO_VARIABLE },
  { name: 'exists', arity: [3], why: TWO_VARIABLE },
  { name: 'existsOne', why: TWO_VARIABLE },
  { name: 'exists_one', arity: [3], why: TWO_VARIABLE },
  { name: 'transformList', why: TWO_VARIABLE },
  { name: 'transformMap', why: TWO_VARIABLE },
  { name: 'transformMapEntry', why: TWO_VARIABLE },
  { name: 'optMap', why: 'the optional macros optMap and optFlatMap are not supported by this CEL engine' },
  { name: 'optFlatMap', why: 'the optional macros optMap and optFlatMap are not supported by this CEL engine' },
  { name: 'sortBy', why: 'the lists macro sortBy is not supported by this CEL engine' },
];

/** Variables the apiserver declares that this gateway does not give. */
const MISSING_VARIABLES: ReadonlyMap<string, string> = new Map([
  [
    'authorizer',
    "the apiserver gives it to an admission policy's validations, matchConditions, variables, auditAnnotations and mutations, not to this field",
  ],
]);

/** Why `name` called with `arity` arguments is not available, or undefined when it is (or is unknown to both). */
export function missingFunction(name: string, arity: number): string | undefined {
  const missing = MISSING.find((m) => m.name === name && (m.arity === undefined || m.arity.includes(arity)));
  return missing && `function "${name}" is not available: ${missing.why}`;
}

export function missingVariable(name: string): string | undefined {
  const why = MISSING_VARIABLES.get(name);
  return why && `variable "${name}" is not available: ${why}`;
}
