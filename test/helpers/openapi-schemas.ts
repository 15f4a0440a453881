/**
 * Validates values against the schemas of an OpenAPI document as a provider author's tooling would: Ajv on
 * JSON Schema 2020-12 with the formats, every `$ref` resolved against the document itself. Strict, so a keyword
 * Ajv does not know (a typo) fails to compile; strictRequired is off, as it refuses the usual `oneOf` of
 * `required` lists.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { OpenApiDocument } from '../../server/protocol/openapi.js';

// ajv-formats is CommonJS: imported from ESM, its plugin is the module's `default` member.
const addFormats = ajvFormats.default;

const DOCUMENT_ID = 'openapi.json';

/** A JSON pointer into the document, as a URI fragment. */
const fragment = (...segments: readonly string[]): string =>
  `#/${segments.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;

export interface DocumentSchemas {
  /** The components.schemas entry `name`. */
  component(name: string): ValidateFunction;
  /** The schema at a JSON pointer's segments below the document's root (`paths`, `/{handler}`, `post`, …). */
  at(...segments: readonly string[]): ValidateFunction;
  /** Ajv's errors of the last validation of `validate`, one line each, for assertion messages. */
  errors(validate: ValidateFunction): string;
}

export function documentSchemas(document: OpenApiDocument): DocumentSchemas {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  addFormats(ajv);
  // The document is not a schema: only the places its $refs and these lookups reach are compiled.
  ajv.addKeyword('openapi').addKeyword('info').addKeyword('paths').addKeyword('components');
  ajv.addSchema(structuredClone(document), DOCUMENT_ID);
  const at = (...segments: readonly string[]): ValidateFunction => {
    const validate = ajv.getSchema(`${DOCUMENT_ID}${fragment(...segments)}`);
    if (!validate) throw new Error(`no schema at ${segments.join(' / ')}`);
    return validate;
  };
  return {
    component: (name) => at('components', 'schemas', name),
    at,
    errors: (validate) =>
      (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`).join('\n'),
  };
}
