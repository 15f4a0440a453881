/** A place in an expression, for messages: 1-based line and column (in characters), and the 0-based offset. */
export interface Position {
  readonly line: number;
  readonly column: number;
  readonly offset: number;
}

export function positionAt(expression: string, offset: number): Position {
  const at = Math.max(0, Math.min(offset, expression.length));
  let line = 1;
  let lineStart = 0;
  for (let i = expression.indexOf('\n'); i !== -1 && i < at; i = expression.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: at - lineStart + 1, offset: at };
}
