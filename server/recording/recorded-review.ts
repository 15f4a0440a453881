/**
 * One line of a recording (README "Recording and replaying reviews"): the request as the gateway received it
 * (redacted), the answer it gave, the route that answered, and what each step did — a provider step's outcome,
 * message, warnings and returned patch are what `replay --offline` answers in its place. Written by the
 * recorder, read back by `replay`, which treats the file as hostile: every field is checked, and a bad line is
 * an error naming it.
 */
import { decodeReview } from '../admission/codec.js';
import { ADMISSION_V1, type AdmissionRequest, type JsonPatchOperation, type Phase } from '../admission/types.js';
import { FAILURE_REASONS as FAILURE_REASON_LIST, type FailureReason } from '../base/errors.js';
import { MAX_NESTING_DEPTH, nestsDeeperThan } from '../base/limits.js';
import type { ReviewedRequest } from '../dispatch/reviewer.js';
import { STEP_OUTCOMES, type StepOutcome } from '../metrics/metrics.js';
import type { Redaction } from './redact.js';

/**
 * The longest line of a recording: a review of the largest body the webhook accepts (7 MiB by default), its
 * patch and its steps fit. The recorder drops a longer one; `replay` refuses it.
 */
export const MAX_LINE_BYTES = 32 * 1024 * 1024;

/** The format of a recording's lines; a reader refuses any other. */
export const RECORDING_FORMAT = 1;

/** The answer as it was given. */
export interface RecordedAnswer {
  readonly allowed: boolean;
  readonly code?: number;
  readonly message?: string;
  readonly patch?: readonly JsonPatchOperation[];
  readonly warnings?: readonly string[];
}

/** What one step did for the review. */
export interface RecordedStep {
  readonly step: string;
  readonly source: 'plugin' | 'provider' | 'policy';
  readonly outcome: StepOutcome;
  /** The denial's message, or the failure's. */
  readonly message?: string;
  /** A failure's reason (`connection`, `http_status`, …; server/base/errors.ts). */
  readonly reason?: FailureReason;
  /** A provider's patch as it returned it; an in-process step's operations in the review's patch. */
  readonly patch?: readonly JsonPatchOperation[];
  /** Its warnings, each prefixed with the step's name as the answer carries them. */
  readonly warnings?: readonly string[];
}

export interface RecordedReview {
  readonly format: typeof RECORDING_FORMAT;
  readonly recordedAt: string;
  /** The webhook route that answered it: mutate, validate, or a split of one (validate/fail, …). */
  readonly route: string;
  readonly phase: Phase;
  readonly traceId: string;
  readonly request: AdmissionRequest;
  readonly answer: RecordedAnswer;
  readonly steps: readonly RecordedStep[];
}

/** The line of a reviewed request, redacted. */
export function recordedReviewOf(reviewed: ReviewedRequest, redaction: Redaction): RecordedReview {
  const { request, response, decision, trace } = reviewed;
  const patch = redaction.patch(request, decision.patch);
  return {
    format: RECORDING_FORMAT,
    recordedAt: trace.startedAt,
    route: trace.route,
    phase: trace.phase,
    traceId: trace.traceId,
    request: redaction.request(request),
    answer: {
      allowed: response.allowed,
      ...(response.status?.code !== undefined && !response.allowed ? { code: response.status.code } : {}),
      ...(response.status?.message ? { message: response.status.message } : {}),
      ...(patch?.length ? { patch } : {}),
      ...(response.warnings?.length ? { warnings: response.warnings } : {}),
    },
    steps: trace.steps.map((s) => {
      const stepPatch = redaction.patch(request, s.patch);
      const failed = s.outcome === 'error' || s.outcome === 'timeout' || s.outcome === 'circuit_open';
      return {
        step: s.step,
        source: s.source,
        outcome: s.outcome,
        ...(s.message ? { message: s.message } : {}),
        ...(failed && s.reason ? { reason: s.reason as FailureReason } : {}),
        ...(stepPatch?.length ? { patch: stepPatch } : {}),
        ...(s.warnings?.length ? { warnings: s.warnings } : {}),
      };
    }),
  };
}

/** A line that is not a recorded review: the message says what is wrong with it. */
export class RecordingLineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordingLineError';
  }
}

/** What a reader accepts: the outcomes and failure reasons the gateway itself has. */
const OUTCOMES: ReadonlySet<string> = new Set(STEP_OUTCOMES);
const FAILURE_REASONS: ReadonlySet<string> = new Set(FAILURE_REASON_LIST);
const OPS: ReadonlySet<string> = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(message: string): never {
  throw new RecordingLineError(message);
}

function optionalString(m: Record<string, unknown>, key: string, where: string): string | undefined {
  const v = m[key];
  if (v !== undefined && typeof v !== 'string') fail(`${where}.${key} must be a string`);
  return v;
}

function stringList(value: unknown, where: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) fail(`${where} must be a list of strings`);
  return value as string[];
}

function patchOf(value: unknown, where: string): JsonPatchOperation[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) fail(`${where} must be a list of JSON patch operations`);
  value.forEach((op, i) => {
    if (!isRecord(op) || typeof op.op !== 'string' || !OPS.has(op.op) || typeof op.path !== 'string') {
      fail(`${where}[${i}] is not a JSON patch operation`);
    }
  });
  return value as JsonPatchOperation[];
}

/**
 * How deep a line may nest: a review the webhook accepted nests at most MAX_NESTING_DEPTH, and a line holds its
 * request, and a step's patch values, a few levels down.
 */
export const MAX_LINE_NESTING = MAX_NESTING_DEPTH + 4;

/** Parses and checks one line; throws RecordingLineError saying what is wrong. */
export function parseRecordedReview(line: string, routes: readonly string[]): RecordedReview {
  // Comparing, copying and serialising a value recurse: one nested deeper would overflow the stack.
  if (nestsDeeperThan(line, MAX_LINE_NESTING))
    fail(`nests arrays and objects more than ${MAX_LINE_NESTING} levels deep`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (err) {
    fail(`not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(parsed)) fail('expected a JSON object (a recorded review)');
  if (parsed.format !== RECORDING_FORMAT) {
    fail(`format ${JSON.stringify(parsed.format) ?? 'missing'}: expected ${RECORDING_FORMAT}`);
  }
  const route = parsed.route;
  if (typeof route !== 'string' || !routes.includes(route)) fail(`route must be one of ${routes.join(', ')}`);
  const phase: Phase = route.startsWith('mutate') ? 'mutate' : 'validate';
  let request: AdmissionRequest;
  try {
    // The checks the webhook makes of what the apiserver sends, made again of what the file says it sent.
    request = decodeReview(
      JSON.stringify({ apiVersion: ADMISSION_V1, kind: 'AdmissionReview', request: parsed.request }),
    ).request;
  } catch (err) {
    fail(`request: ${(err as Error).message}`);
  }
  const answer = parsed.answer;
  if (!isRecord(answer) || typeof answer.allowed !== 'boolean') fail('answer.allowed must be true or false');
  if (answer.code !== undefined && !Number.isInteger(answer.code)) fail('answer.code must be an integer');
  const message = optionalString(answer, 'message', 'answer');
  const patch = patchOf(answer.patch, 'answer.patch');
  const warnings = stringList(answer.warnings, 'answer.warnings');
  if (!Array.isArray(parsed.steps)) fail('steps must be a list');
  const steps = parsed.steps.map((s: unknown, i): RecordedStep => {
    const where = `steps[${i}]`;
    if (!isRecord(s) || typeof s.step !== 'string') fail(`${where}.step must be a step name`);
    if (s.source !== 'plugin' && s.source !== 'provider' && s.source !== 'policy')
      fail(`${where}.source must be plugin, provider or policy`);
    if (typeof s.outcome !== 'string' || !OUTCOMES.has(s.outcome)) fail(`${where}.outcome is not a step outcome`);
    const stepMessage = optionalString(s, 'message', where);
    if (s.reason !== undefined && (typeof s.reason !== 'string' || !FAILURE_REASONS.has(s.reason))) {
      fail(`${where}.reason is not a failure reason`);
    }
    const stepPatch = patchOf(s.patch, `${where}.patch`);
    const stepWarnings = stringList(s.warnings, `${where}.warnings`);
    return {
      step: s.step,
      source: s.source,
      outcome: s.outcome as StepOutcome,
      ...(stepMessage !== undefined ? { message: stepMessage } : {}),
      ...(s.reason !== undefined ? { reason: s.reason as FailureReason } : {}),
      ...(stepPatch ? { patch: stepPatch } : {}),
      ...(stepWarnings ? { warnings: stepWarnings } : {}),
    };
  });
  return {
    format: RECORDING_FORMAT,
    recordedAt: typeof parsed.recordedAt === 'string' ? parsed.recordedAt : '',
    route,
    phase,
    traceId: typeof parsed.traceId === 'string' ? parsed.traceId : '',
    request,
    answer: {
      allowed: answer.allowed,
      ...(typeof answer.code === 'number' ? { code: answer.code } : {}),
      ...(message !== undefined ? { message } : {}),
      ...(patch ? { patch } : {}),
      ...(warnings ? { warnings } : {}),
    },
    steps,
  };
}
