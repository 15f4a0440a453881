/**
 * What the protocol's schemas are built with besides TypeBox itself: naming a schema as an OpenAPI component,
 * and the JSON maps TypeBox would spell as patternProperties. A schema here is a plain JSON Schema (2020-12)
 * value whose TypeScript type TypeBox derives (`Static`), so the OpenAPI document and the code read one source.
 */
import { Type, type Static, type TObject, type TSchema, type TSchemaOptions, type TUnsafe } from 'typebox';

/** Marks a schema as an OpenAPI component; a symbol, so the schema's JSON stays untouched. */
const COMPONENT = Symbol('openapi component');

/**
 * Names `schema` as the component `name`: the OpenAPI document defines it once under components.schemas and
 * refers to it wherever it appears. TypeBox copies a schema's own symbols when it wraps one (Type.Optional),
 * so the name follows the schema into every property that holds it.
 */
export function component<T extends TSchema>(name: string, schema: T): T {
  Object.defineProperty(schema, COMPONENT, { value: name, enumerable: false });
  return schema;
}

/** The component name `value` was given, if any. */
export function componentName(value: object): string | undefined {
  const name: unknown = (value as { [COMPONENT]?: unknown })[COMPONENT];
  return typeof name === 'string' ? name : undefined;
}

/**
 * A JSON object whose every member is `value`, written `additionalProperties` as OpenAPI tools expect
 * (TypeBox's Record is patternProperties `^.*$`).
 */
export const mapOf = <V extends TSchema>(value: V, options: object = {}): TUnsafe<Record<string, Static<V>>> =>
  Type.Unsafe<Record<string, Static<V>>>({ type: 'object', additionalProperties: value, ...options });

/** The same map, read-only in TypeScript (a selector's matchLabels). */
export const readonlyMapOf = <V extends TSchema>(
  value: V,
  options: object = {},
): TUnsafe<Readonly<Record<string, Static<V>>>> =>
  Type.Unsafe<Readonly<Record<string, Static<V>>>>({ type: 'object', additionalProperties: value, ...options });

/** `schema` or JSON null: Kubernetes clients may send a map or list they left out as null. */
export const orNull = <T extends TSchema>(schema: T, options: TSchemaOptions = {}) =>
  Type.Union([schema, Type.Null()], options);

/**
 * An object open to members beyond its `fields` (a Kubernetes object, its metadata), typed as the interface `T`:
 * TypeBox derives no index signature, so the type is declared, and type-checks.ts holds T's named members equal
 * to what `fields` derives.
 */
export const openObject = <T>(fields: TObject, options: TSchemaOptions = {}): TUnsafe<T> =>
  Type.Unsafe<T>({ ...fields, additionalProperties: true, ...options });
