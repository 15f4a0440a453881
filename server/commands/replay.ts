/**
 * `admission-gateway replay <recording> [--config CANDIDATE.yaml] [--offline] [-o text|json] [--exit-code]`:
 * every review of a recording (config `record:`) run through the candidate chain on the route that answered
 * it, and the report of what would be answered differently (README "Recording and replaying reviews"). With
 * --exit-code it gates CI: EXIT_DENIED when a review would now be denied, EXIT_CHANGED for any other difference.
 */
import path from 'node:path';
import type { AdmissionRequest } from '../admission/types.js';
import { escapeControl } from '../base/limits.js';
import type { ReviewResult } from '../dispatch/reviewer.js';
import type { GatewayConfig } from '../config/types.js';
import { ROUTES, selectionOf, type Route } from '../http/routes.js';
import { OfflineAnswers, offlineChain } from '../recording/offline-steps.js';
import type { RecordedAnswer } from '../recording/recorded-review.js';
import { compileRedaction, type Redaction } from '../recording/redact.js';
import { RecordingFileError, recordedReviews } from '../recording/recording-file.js';
import {
  describeRequest,
  diffAnswers,
  renderReport,
  summarise,
  type ReplayReport,
  type ReviewDifference,
} from '../recording/review-diff.js';
import { loadExceptions } from '../exceptions/watched-exceptions.js';
import { commandChain, offlineReviewer, type CommandIO } from './offline-reviewer.js';
import { EXIT_CHANGED, EXIT_DENIED, UsageError } from './usage.js';

export interface ReplayCommand {
  readonly recording: string;
  readonly offline: boolean;
  readonly output: 'text' | 'json';
  readonly exitCode: boolean;
  /** Files of exceptions applied besides the candidate's `exceptions.files` (README "Exceptions"). */
  readonly exceptions?: readonly string[];
}

/** Checks replay's arguments before anything is read. */
export function replayCommand(
  args: readonly string[],
  options: {
    offline?: boolean | undefined;
    output?: string | undefined;
    exitCode?: boolean | undefined;
    exceptions?: readonly string[] | undefined;
  },
): ReplayCommand {
  const [recording, extra] = args;
  if (!recording) throw new UsageError('replay: expected the recording (an NDJSON file written by record:)');
  if (extra !== undefined) throw new UsageError(`replay: unexpected argument "${extra}" (one recording at a time)`);
  const output = options.output ?? 'text';
  if (output !== 'text' && output !== 'json') throw new UsageError(`--output: expected text or json, got "${output}"`);
  return {
    recording,
    offline: options.offline === true,
    output,
    exitCode: options.exitCode === true,
    ...(options.exceptions?.length ? { exceptions: options.exceptions } : {}),
  };
}

/** The candidate's answer as a recording states one, its patch redacted as the recording's are. */
function answerOf(result: ReviewResult, redaction: Redaction, request: AdmissionRequest): RecordedAnswer {
  const { response, decision } = result;
  const patch = redaction.patch(request, decision.patch);
  return {
    allowed: response.allowed,
    ...(response.status?.code !== undefined && !response.allowed ? { code: response.status.code } : {}),
    ...(response.status?.message ? { message: response.status.message } : {}),
    ...(patch?.length ? { patch } : {}),
    ...(response.warnings?.length ? { warnings: response.warnings } : {}),
  };
}

/** The exit code of a report: with --exit-code, EXIT_DENIED over EXIT_CHANGED over 0. */
export function replayExitCode(report: ReplayReport, exitCode: boolean): number {
  if (!exitCode) return 0;
  if (report.summary.newly_denied > 0) return EXIT_DENIED;
  return report.differences.length > 0 ? EXIT_CHANGED : 0;
}

/** Runs the replay; returns the exit code. */
export async function runReplay(command: ReplayCommand, config: GatewayConfig, io: CommandIO): Promise<number> {
  const file = path.resolve(io.cwd, command.recording);
  // The exceptions admission would apply: the candidate's files and --exceptions, each review's judged at the
  // time it was recorded (as admission judged it then), one without a time now.
  let reviewedAt = Date.now();
  const exceptions = await loadExceptions(config.exceptions, {
    files: (command.exceptions ?? []).map((f) => path.resolve(io.cwd, f)),
    clock: () => reviewedAt,
  });
  const { log, metrics, chains } = await commandChain(config, io);
  const answers = new OfflineAnswers();
  try {
    // Online, providers with discovery get one attempt, as `review` gives them; offline, nothing is called.
    if (!command.offline) await Promise.all(chains.runtimes().map((r) => r.discover()));
    const chain = command.offline ? offlineChain(chains.current(), answers) : chains.current();
    const reviewer = offlineReviewer(chain, { log, metrics, config, exceptions });
    // The candidate's patches are compared with the recording's redacted ones, so redacted alike.
    const redaction = compileRedaction(config.record.redact);
    const differences: ReviewDifference[] = [];
    let reviews = 0;
    for await (const { line, review: recorded } of recordedReviews(file, ROUTES)) {
      answers.replaying(recorded, line);
      reviewedAt = Date.parse(recorded.recordedAt) || Date.now();
      const result = await reviewer.review(recorded.request, selectionOf(recorded.route as Route));
      reviews++;
      const changes = diffAnswers(recorded.answer, answerOf(result, redaction, recorded.request));
      if (changes.length > 0) {
        differences.push({
          line,
          route: recorded.route,
          uid: recorded.request.uid,
          request: describeRequest(recorded.request),
          changes,
        });
      }
    }
    const report: ReplayReport = {
      recording: command.recording,
      config: config.file,
      offline: command.offline,
      reviews,
      summary: summarise(reviews, differences),
      differences,
      notRecorded: answers.notRecorded(),
    };
    // JSON escapes the C0 controls; the lines of its text escape the rest.
    const json = () => `${JSON.stringify(report, null, 2).split('\n').map(escapeControl).join('\n')}\n`;
    io.stdout(command.output === 'json' ? json() : renderReport(report));
    return replayExitCode(report, command.exitCode);
  } catch (err) {
    if (err instanceof RecordingFileError) throw new UsageError(`replay: ${escapeControl(err.message)}`);
    throw err;
  } finally {
    await chains.close();
  }
}
