/** CEL literals for the expressions the renderer writes (webhook and authorizer match conditions). */

/** A single-quoted CEL string: backslashes and quotes escaped, so any name stays one literal. */
export const celString = (value: string): string => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** A CEL list of strings. */
export const celList = (values: readonly string[]): string => `[${values.map(celString).join(', ')}]`;
