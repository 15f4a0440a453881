/**
 * What a test file says one remote provider answers (docs/policy-tests.md, "providers"): AdmissionReview
 * responses written inline, per case and per phase, a default for the other cases, a recording to take
 * answers from, and the discovery document of a provider that has one.
 */
import path from 'node:path';
import type { Phase } from '../admission/types.js';
import { Reader, childPath } from '../config/reader.js';
import type { PhaseAnswers, ProviderDouble, ProviderResponse } from './suite.js';

const FIELDS = ['default', 'answers', 'from', 'discovery'] as const;
const RESPONSE_FIELDS = ['allowed', 'patch', 'patchType', 'warnings', 'auditAnnotations', 'status'] as const;
const STATUS_FIELDS = ['code', 'message', 'reason'] as const;
const PHASES: readonly Phase[] = ['mutate', 'validate'];

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * One response: `patch` as JSON patch operations (sent in base64, with patchType JSONPatch unless another is
 * written) or as the base64 a provider would send. Nothing more is checked of its meaning: the gateway's
 * client checks the answer as it checks any provider's, so a test may pin what an unusable one does.
 */
function readResponse(reader: Reader, value: unknown, field: string): ProviderResponse {
  const r = reader.map(value, field, RESPONSE_FIELDS, false);
  const allowed = reader.boolean(r.allowed, `${field}.allowed`);
  if (allowed === undefined) reader.fail(`${field}.allowed`, 'is required (true or false)');
  let patch: string | undefined;
  if (typeof r.patch === 'string') patch = r.patch;
  else if (Array.isArray(r.patch)) patch = Buffer.from(JSON.stringify(r.patch)).toString('base64');
  else if (r.patch !== undefined && r.patch !== null) {
    reader.fail(`${field}.patch`, 'expected JSON patch operations, or their base64', r.patch);
  }
  const patchType = reader.string(r.patchType, `${field}.patchType`) ?? (patch !== undefined ? 'JSONPatch' : undefined);
  const warnings = reader.stringList(r.warnings, `${field}.warnings`);
  const auditAnnotations = reader.stringMap(r.auditAnnotations, `${field}.auditAnnotations`);
  const s = reader.map(r.status, `${field}.status`, STATUS_FIELDS);
  const code = reader.integer(s.code, `${field}.status.code`, 100, 599);
  const message = reader.string(s.message, `${field}.status.message`);
  const reason = reader.string(s.reason, `${field}.status.reason`);
  const status = {
    ...(code !== undefined ? { code } : {}),
    ...(message !== undefined ? { message } : {}),
    ...(reason !== undefined ? { reason } : {}),
  };
  return {
    allowed,
    ...(patch !== undefined ? { patch } : {}),
    ...(patchType !== undefined ? { patchType } : {}),
    ...(warnings ? { warnings } : {}),
    ...(auditAnnotations ? { auditAnnotations } : {}),
    ...(Object.keys(status).length > 0 ? { status } : {}),
  };
}

/** One answer for every call of a case, or `mutate:` and `validate:` apart. */
function readPhaseAnswers(reader: Reader, value: unknown, field: string): PhaseAnswers {
  if (isMap(value) && PHASES.some((phase) => phase in value)) {
    const byPhase = reader.map(value, field, PHASES);
    return Object.fromEntries(
      PHASES.filter((phase) => byPhase[phase] !== undefined).map((phase) => [
        phase,
        readResponse(reader, byPhase[phase], `${field}.${phase}`),
      ]),
    );
  }
  const response = readResponse(reader, value, field);
  return { mutate: response, validate: response };
}

/** `providers.<name>` of the test file; `dir` is the test file's folder. */
export function readProviderDouble(reader: Reader, name: string, value: unknown, dir: string): ProviderDouble {
  const field = childPath('providers', name);
  const p = reader.map(value, field, FIELDS);
  if (p.answers !== undefined && !isMap(p.answers)) reader.fail(`${field}.answers`, 'expected a map', p.answers);
  const answers = new Map<string, PhaseAnswers>();
  for (const [name, answer] of Object.entries(p.answers ?? {})) {
    answers.set(name, readPhaseAnswers(reader, answer, childPath(`${field}.answers`, name)));
  }
  const from = reader.string(p.from, `${field}.from`);
  if (p.discovery !== undefined && !isMap(p.discovery)) {
    reader.fail(`${field}.discovery`, 'expected the discovery document (a map)', p.discovery);
  }
  return {
    name,
    field,
    ...(p.default !== undefined ? { default: readPhaseAnswers(reader, p.default, `${field}.default`) } : {}),
    answers,
    ...(from !== undefined ? { from: path.resolve(dir, from) } : {}),
    ...(p.discovery !== undefined ? { discovery: p.discovery } : {}),
  };
}
