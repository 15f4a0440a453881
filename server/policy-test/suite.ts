/**
 * A test file as `admission-gateway test` runs it (docs/policy-tests.md): the config under test, what its
 * remote providers answer, and the cases, each a request and what is expected of the answer.
 */
import type { AdmissionRequest, JsonPatchOperation, Phase } from '../admission/types.js';
import type { LocateField } from '../config/field-positions.js';
import type { Route } from '../http/routes.js';
import type { TextPattern } from './text-pattern.js';

export const TEST_API_VERSION = 'admissiongateway.io/v1alpha1';
export const TEST_KIND = 'AdmissionTest';

/** How an expected list, map or object is compared: the expected part is found in the answer, or is all of it. */
export type MatchMode = 'subset' | 'whole';
export const MATCH_MODES: readonly MatchMode[] = ['subset', 'whole'];

/** What a case expects; an absent field is not checked. */
export interface Expectation {
  readonly allowed?: boolean;
  /** The refusal's HTTP code. */
  readonly code?: number;
  readonly message?: TextPattern;
  readonly warnings?: readonly TextPattern[];
  readonly warningsMatch: MatchMode;
  readonly auditAnnotations?: Readonly<Record<string, TextPattern>>;
  readonly auditAnnotationsMatch: MatchMode;
  /** The mutate phase's JSON patch, operation for operation. */
  readonly patch?: readonly JsonPatchOperation[];
  /** The object after the mutate phase's patch. */
  readonly patched?: unknown;
  readonly patchedMatch: MatchMode;
}

/** The webhook routes a case is reviewed on: both phases (`all`), or one route as the apiserver calls it. */
export type CaseRoute = 'all' | Route;

export interface TestCase {
  readonly name: string;
  /** Where it is in the file (`cases[3]`), for messages. */
  readonly field: string;
  readonly request: AdmissionRequest;
  readonly route: CaseRoute;
  /** The labels of the request's namespace, besides its name label; absent: the name label only. */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  readonly expect: Expectation;
}

/** An AdmissionReview response a provider answers with, without its uid (the call's is echoed). */
export type ProviderResponse = Readonly<Record<string, unknown>>;

/** A provider's answer for a case: the same for both phases, or one per phase. */
export type PhaseAnswers = Readonly<Partial<Record<Phase, ProviderResponse>>>;

/** What the test file says a remote provider (a chain entry, by name) answers. */
export interface ProviderDouble {
  readonly name: string;
  /** Where it is in the file (`providers.scanner`), for messages. */
  readonly field: string;
  /** For a case with no answer of its own. */
  readonly default?: PhaseAnswers;
  /** By case name. */
  readonly answers: ReadonlyMap<string, PhaseAnswers>;
  /** A recording (absolute path) whose answers of this provider's steps are given to the cases of the same uid. */
  readonly from?: string;
  /** The discovery document, for a provider with `discovery: true`. */
  readonly discovery?: unknown;
}

export interface TestSuite {
  /** The test file as named on the command line or found. */
  readonly file: string;
  /** The config under test (absolute path). */
  readonly config: string;
  /**
   * Native admission policy files or folders (absolute paths) added to the config's chain for the test, as one
   * `admissionPolicies` entry after its own (docs/policy-tests.md).
   */
  readonly policies: readonly string[];
  /** AdmissionException files (absolute paths) applied besides the config's `exceptions.files`. */
  readonly exceptions: readonly string[];
  readonly providers: ReadonlyMap<string, ProviderDouble>;
  readonly cases: readonly TestCase[];
  /** Where a field of the test file is written. */
  readonly locate: LocateField;
}
