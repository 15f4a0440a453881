/**
 * Kubernetes resource quantities (`100m`, `1.5Gi`, `1e3`), parsed to numbers precise enough to compare.
 * https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
 */

const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([KMGTPE]i)|[eE]([+-]?\d+)|([numkMGTPE]))?$/;

const BINARY_POWERS: ReadonlyMap<string, number> = new Map([
  ['Ki', 10],
  ['Mi', 20],
  ['Gi', 30],
  ['Ti', 40],
  ['Pi', 50],
  ['Ei', 60],
]);

const DECIMAL_EXPONENTS: ReadonlyMap<string, number> = new Map([
  ['n', -9],
  ['u', -6],
  ['m', -3],
  ['k', 3],
  ['M', 6],
  ['G', 9],
  ['T', 12],
  ['P', 15],
  ['E', 18],
]);

/** The value of a quantity string, or undefined when it is not one. */
export function parseQuantity(text: string): number | undefined {
  const match = QUANTITY.exec(text);
  if (!match) return undefined;
  const [, mantissa = '', binary, exponent, decimal] = match;
  if (binary !== undefined) return Number(mantissa) * 2 ** (BINARY_POWERS.get(binary) ?? 0);
  // Scaling through the exponent, not a multiplication, keeps `300m` exactly equal to `0.3`.
  const scale = exponent !== undefined ? Number(exponent) : (DECIMAL_EXPONENTS.get(decimal ?? '') ?? 0);
  return Number(`${mantissa}e${scale}`);
}
