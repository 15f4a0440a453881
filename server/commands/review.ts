/**
 * `admission-gateway review <file|->`: the configured chain run offline on one request, as the apiserver
 * would run it (mutate, then validate on the mutated object), printed as JSON on stdout. Logs go to stderr
 * in serve's format. With --exit-code a refused request exits EXIT_DENIED, so the command can gate CI.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { encodeReview } from '../admission/codec.js';
import type { AdmissionApiVersion } from '../admission/types.js';
import { errorMessage } from '../base/errors.js';
import type { BindableLogger } from '../base/log.js';
import type { Chain } from '../chain/chain.js';
import type { AnyPlugin } from '../chain/plugin-registry.js';
import type { ReviewResult, ReviewedRequest } from '../dispatch/reviewer.js';
import { renderTrace } from '../explain/render-trace.js';
import type { KeptTrace } from '../explain/trace-buffer.js';
import type { GatewayConfig } from '../config/types.js';
import { ROUTES, type Route } from '../http/routes.js';
import { type Metrics } from '../metrics/metrics.js';
import type { AdmissionRequest } from '../admission/types.js';
import { reviewAsApiserver } from '../policy-test/apiserver-review.js';
import { commandChain, offlineReviewer } from './offline-reviewer.js';
import { loadExceptions } from '../exceptions/watched-exceptions.js';
import type { ExceptionSource } from '../exceptions/exception-source.js';
import { reviewInput } from './review-input.js';
import { EXIT_DENIED, UsageError } from './usage.js';

export interface ReviewCommand {
  /** A file name, or "-" for standard input. */
  readonly source: string;
  readonly route: 'all' | Route;
  /** Exit EXIT_DENIED when the request is refused. */
  readonly exitCode: boolean;
  /** Print the decision traces instead of the answers, as text or JSON. */
  readonly explain?: 'text' | 'json';
  /** Files of exceptions applied besides the config's `exceptions.files` (README "Exceptions"). */
  readonly exceptions?: readonly string[];
}

export interface ReviewIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly stdin: () => Promise<string>;
  readonly cwd: string;
  readonly plugins?: readonly AnyPlugin[] | undefined;
}

/** Checks review's arguments before anything is read. */
export function reviewCommand(
  args: readonly string[],
  route: string | undefined,
  exitCode: boolean,
  {
    explain = false,
    output,
    exceptions,
  }: { explain?: boolean; output?: string | undefined; exceptions?: readonly string[] | undefined } = {},
): ReviewCommand {
  const [source, extra] = args;
  if (!source) throw new UsageError('review: expected a file name or "-" for standard input');
  if (extra !== undefined) throw new UsageError(`review: unexpected argument "${extra}" (one file at a time)`);
  const name = route ?? 'all';
  if (name !== 'all' && !(ROUTES as readonly string[]).includes(name)) {
    throw new UsageError(`--route: expected all or one of ${ROUTES.join(', ')}, got "${name}"`);
  }
  if (output !== undefined && output !== 'text' && output !== 'json') {
    throw new UsageError(`--output: expected text or json, got "${output}"`);
  }
  // Without --explain the answers are JSON, so asking for JSON is asking for what is printed anyway.
  if (output === 'text' && !explain) {
    throw new UsageError('review: --output text goes with --explain (without it, review prints JSON)');
  }
  return {
    source,
    route: name as ReviewCommand['route'],
    exitCode,
    ...(explain ? { explain: output === 'json' ? 'json' : 'text' } : {}),
    ...(exceptions?.length ? { exceptions } : {}),
  };
}

function printable(result: ReviewResult, apiVersion: AdmissionApiVersion) {
  return {
    review: JSON.parse(encodeReview(apiVersion, result.response).toString()) as unknown,
    patch: result.decision.patch ?? null,
    steps: result.reports,
  };
}

async function readSource(command: ReviewCommand, io: ReviewIO): Promise<string> {
  try {
    return command.source === '-' ? await io.stdin() : await readFile(path.resolve(io.cwd, command.source), 'utf8');
  } catch (err) {
    throw new UsageError(`review: cannot read "${command.source}": ${errorMessage(err)}`);
  }
}

/** Runs the `review` command: reviews the input offline and prints the answer; returns the exit code. */
export async function runReviewCommand(command: ReviewCommand, config: GatewayConfig, io: ReviewIO): Promise<number> {
  const input = reviewInput(await readSource(command, io), command.source);
  if (input.wrapped) io.stderr(`admission-gateway review: reviewing the ${input.wrapped}\n`);
  const exceptions = await loadExceptions(config.exceptions, {
    files: (command.exceptions ?? []).map((file) => path.resolve(io.cwd, file)),
  });
  const { log, metrics, chains } = await commandChain(config, io);
  try {
    // Providers with discovery get one attempt, so the offline run sees their handlers.
    await Promise.all(chains.runtimes().map((r) => r.discover()));
    const traces: KeptTrace[] = [];
    const { output, allowed } = await reviewOnChain(chains.current(), input.request, input.apiVersion, command.route, {
      log,
      metrics,
      config,
      exceptions,
      // The reviewer's own object: its patch values are shown in full.
      ...(command.explain ? { onReviewed: (r: ReviewedRequest) => traces.push({ ...r.trace, redacted: false }) } : {}),
    });
    if (command.explain === 'text') io.stdout(`${traces.map(renderTrace).join('\n\n')}\n`);
    else if (command.explain === 'json') io.stdout(`${JSON.stringify({ allowed, reviews: traces }, null, 2)}\n`);
    else io.stdout(`${JSON.stringify(output, null, 2)}\n`);
    return command.exitCode && !allowed ? EXIT_DENIED : 0;
  } finally {
    await chains.close();
  }
}

async function reviewOnChain(
  chain: Chain,
  request: AdmissionRequest,
  apiVersion: AdmissionApiVersion,
  route: ReviewCommand['route'],
  deps: {
    log: BindableLogger;
    metrics: Metrics;
    config: GatewayConfig;
    exceptions: ExceptionSource;
    onReviewed?: (reviewed: ReviewedRequest) => void;
  },
): Promise<{ output: unknown; allowed: boolean }> {
  const { mutate, validate, allowed } = await reviewAsApiserver(offlineReviewer(chain, deps), request, route);
  if (route !== 'all') return { output: printable((mutate ?? validate)!, apiVersion), allowed };
  return {
    output: {
      ...(mutate ? { mutate: printable(mutate, apiVersion) } : {}),
      ...(validate ? { validate: printable(validate, apiVersion) } : {}),
      allowed,
    },
    allowed,
  };
}
