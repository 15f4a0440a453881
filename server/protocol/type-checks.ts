/**
 * The hand-written wire interfaces of admission/types.ts and the schemas of this folder say the same thing,
 * checked when the code compiles: change a field on either side alone and `npm run typecheck` fails here,
 * naming the pair. The interfaces stay hand-written because admission/ sits below this folder (every module
 * reads them, and plugin authors read their comments).
 */
import type { Static, TSchema } from 'typebox';
import type {
  AdmissionRequest,
  AdmissionResponse,
  AdmissionReview,
  GroupVersionKind,
  GroupVersionResource,
  JsonPatchOperation,
  KubeObject,
  LabelSelector,
  LabelSelectorRequirement,
  Match,
  ObjectMeta,
  Operation,
  RuleWithOperations,
  Status,
  UserInfo,
} from '../admission/types.js';
import type { NonResourceAttributes, ResourceAttributes } from '../authorization/attributes.js';
import type {
  LabelSelectorRequirementSchema,
  LabelSelectorSchema,
  MatchSchema,
  RuleWithOperationsSchema,
} from './match-schema.js';
import type {
  AdmissionRequestSchema,
  AdmissionResponseSchema,
  GroupVersionKindSchema,
  GroupVersionResourceSchema,
  JsonPatchOperationSchema,
  KubeObjectFields,
  KubeObjectSchema,
  ObjectMetaFields,
  ObjectMetaSchema,
  OperationSchema,
  StatusSchema,
  UserInfoSchema,
  reviewRequestSchema,
  reviewResponseSchema,
} from './review-schema.js';
import type { NonResourceAttributesSchema, ResourceAttributesSchema } from './subject-access-review-schema.js';

/**
 * True when A and B are the same type, readonly modifiers and optionality included (plain mutual
 * assignability would let a `readonly` list or an index signature differ unnoticed).
 */
export type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only for `true`. */
export type Assert<T extends true> = T;

/** Whether the schema's type equals the interface. */
type Same<S extends TSchema, I> = Equals<Static<S>, I>;

/** T without its index signature: the members an open object's schema names. */
type NamedMembers<T> = { [K in keyof T as string extends K ? never : K]: T[K] };

export type WireTypesMatchSchemas = [
  Assert<Same<typeof OperationSchema, Operation>>,
  Assert<Same<typeof GroupVersionKindSchema, GroupVersionKind>>,
  Assert<Same<typeof GroupVersionResourceSchema, GroupVersionResource>>,
  Assert<Same<typeof UserInfoSchema, UserInfo>>,
  Assert<Same<typeof ObjectMetaFields, NamedMembers<ObjectMeta>>>,
  Assert<Same<typeof ObjectMetaSchema, ObjectMeta>>,
  Assert<Same<typeof KubeObjectFields, NamedMembers<KubeObject>>>,
  Assert<Same<typeof KubeObjectSchema, KubeObject>>,
  Assert<Same<typeof AdmissionRequestSchema, AdmissionRequest>>,
  Assert<Same<typeof JsonPatchOperationSchema, JsonPatchOperation>>,
  Assert<Same<typeof StatusSchema, Status>>,
  Assert<Same<typeof AdmissionResponseSchema, AdmissionResponse>>,
  Assert<Same<typeof RuleWithOperationsSchema, RuleWithOperations>>,
  Assert<Same<typeof LabelSelectorRequirementSchema, LabelSelectorRequirement>>,
  Assert<Same<typeof LabelSelectorSchema, LabelSelector>>,
  Assert<Same<typeof MatchSchema, Match>>,
  Assert<Same<typeof ResourceAttributesSchema, ResourceAttributes>>,
  Assert<Same<typeof NonResourceAttributesSchema, NonResourceAttributes>>,
  // The review sent in either version is an AdmissionReview, and either version's answer carries an
  // AdmissionResponse: the interfaces the code reads them with.
  Assert<Static<ReturnType<typeof reviewRequestSchema>> extends AdmissionReview ? true : false>,
  Assert<Static<ReturnType<typeof reviewResponseSchema>>['response'] extends AdmissionResponse ? true : false>,
];

/** The check itself: it tells a readonly list, an optional field and an index signature apart. */
export type EqualsTellsApart = [
  Assert<Equals<{ a: string[] }, { a: readonly string[] }> extends false ? true : false>,
  Assert<Equals<{ a: string }, { a?: string }> extends false ? true : false>,
  Assert<Equals<{ a: string }, { a: string; [key: string]: unknown }> extends false ? true : false>,
  Assert<Equals<{ readonly a: string }, { a: string }> extends false ? true : false>,
];
