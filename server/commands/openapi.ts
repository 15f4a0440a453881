/** `openapi`: the provider protocol's OpenAPI document (protocol/openapi.ts) as JSON on standard output. */
import { openApiDocument } from '../protocol/openapi.js';

export function printOpenApi(stdout: (text: string) => void): void {
  stdout(`${JSON.stringify(openApiDocument(), null, 2)}\n`);
}
