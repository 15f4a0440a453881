/**
 * The hand-written wire interfaces of admission/types.ts and the schemas of this folder say the same thing,
 * checked when the code compiles: change a field on either side alone and `npm run typecheck` fails here,
 * naming the pair. The interfaces stay hand-written because admission/ sits below this folder (every module
 * reads them, and plugin authors read their comments).
 */
import type { Static, TSchema } from 'typebox';
import type * as wire from '../admission/types.js';
import type * as access from '../authorization/attributes.js';
import type * as match from './match-schema.js';
import type * as review from './review-schema.js';
import type * as sar from './subject-access-review-schema.js';

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
  Assert<Same<typeof review.OperationSchema, wire.Operation>>,
  Assert<Same<typeof review.GroupVersionKindSchema, wire.GroupVersionKind>>,
  Assert<Same<typeof review.GroupVersionResourceSchema, wire.GroupVersionResource>>,
  Assert<Same<typeof review.UserInfoSchema, wire.UserInfo>>,
  Assert<Same<typeof review.ObjectMetaFields, NamedMembers<wire.ObjectMeta>>>,
  Assert<Same<typeof review.ObjectMetaSchema, wire.ObjectMeta>>,
  Assert<Same<typeof review.KubeObjectFields, NamedMembers<wire.KubeObject>>>,
  Assert<Same<typeof review.KubeObjectSchema, wire.KubeObject>>,
  Assert<Same<typeof review.AdmissionRequestSchema, wire.AdmissionRequest>>,
  Assert<Same<typeof review.JsonPatchOperationSchema, wire.JsonPatchOperation>>,
  Assert<Same<typeof review.StatusSchema, wire.Status>>,
  Assert<Same<typeof review.AdmissionResponseSchema, wire.AdmissionResponse>>,
  Assert<Same<typeof match.RuleWithOperationsSchema, wire.RuleWithOperations>>,
  Assert<Same<typeof match.LabelSelectorRequirementSchema, wire.LabelSelectorRequirement>>,
  Assert<Same<typeof match.LabelSelectorSchema, wire.LabelSelector>>,
  Assert<Same<typeof match.MatchSchema, wire.Match>>,
  Assert<Same<typeof sar.SelectorRequirementSchema, access.SelectorRequirement>>,
  Assert<Same<typeof sar.ResourceAttributesSchema, access.ResourceAttributesWire>>,
  Assert<Same<typeof sar.NonResourceAttributesSchema, access.NonResourceAttributes>>,
  // The review sent in either version is an AdmissionReview, and either version's answer carries an
  // AdmissionResponse: the interfaces the code reads them with.
  Assert<Static<ReturnType<typeof review.reviewRequestSchema>> extends wire.AdmissionReview ? true : false>,
  Assert<
    Static<ReturnType<typeof review.reviewResponseSchema>>['response'] extends wire.AdmissionResponse ? true : false
  >,
];

/** The check itself: it tells a readonly list, an optional field and an index signature apart. */
export type EqualsTellsApart = [
  Assert<Equals<{ a: string[] }, { a: readonly string[] }> extends false ? true : false>,
  Assert<Equals<{ a: string }, { a?: string }> extends false ? true : false>,
  Assert<Equals<{ a: string }, { a: string; [key: string]: unknown }> extends false ? true : false>,
  Assert<Equals<{ readonly a: string }, { a: string }> extends false ? true : false>,
];
