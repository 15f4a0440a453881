/**
 * Provider answers taken from a recording (`providers.<name>.from`): a case whose request has the uid of a
 * recorded review gets, from each provider step, what that step answered then, as `replay --offline` gives it
 * (recording/offline-steps.ts: allowed, its patch, its denial, its failure settled by the step's own policy,
 * its warnings). A step the recording has no answer of for the case is answered as the test file says
 * inline, through provider-doubles.ts. A recording is read once a run, keeping only the reviews of the cases' uids.
 */
import type { Phase } from '../admission/types.js';
import { ConfigError } from '../base/errors.js';
import { locateConfigError } from '../config/field-positions.js';
import { createChain, type Chain } from '../chain/chain.js';
import type { Step } from '../steps/step.js';
import { ROUTES } from '../http/routes.js';
import { OfflineAnswers, offlineStep } from '../recording/offline-steps.js';
import { RecordingFileError, recordedReviews, type RecordedLine } from '../recording/recording-file.js';
import type { CaseInPlay } from './case-in-play.js';
import type { TestSuite } from './suite.js';

/** A recording's reviews, by uid. */
type RecordingIndex = ReadonlyMap<string, readonly RecordedLine[]>;

function indexOf(lines: Iterable<RecordedLine>): RecordingIndex {
  const index = new Map<string, RecordedLine[]>();
  for (const recorded of lines) {
    const uid = recorded.review.request.uid;
    let found = index.get(uid);
    if (!found) index.set(uid, (found = []));
    found.push(recorded);
  }
  return index;
}

/** The reviews of `file` whose uid is one of `uids`. */
async function readRecording(file: string, uids: ReadonlySet<string>): Promise<RecordedLine[]> {
  const kept: RecordedLine[] = [];
  for await (const recorded of recordedReviews(file, ROUTES)) {
    if (uids.has(recorded.review.request.uid)) kept.push(recorded);
  }
  return kept;
}

/** The recordings providers take answers from, each read once for every suite of a run. */
export class RecordedAnswers {
  private constructor(private readonly recordings: ReadonlyMap<string, RecordingIndex>) {}

  /**
   * Reads the recordings the suites' providers name, keeping the reviews of their cases' uids; one that cannot
   * be read is a mistake of the first test file naming it (its `from`, exit 2).
   */
  static async read(suites: readonly TestSuite[]): Promise<RecordedAnswers> {
    const users = new Map<string, { suite: TestSuite; field: string; uids: Set<string> }>();
    for (const suite of suites) {
      for (const double of suite.providers.values()) {
        if (double.from === undefined) continue;
        let user = users.get(double.from);
        if (!user) users.set(double.from, (user = { suite, field: `${double.field}.from`, uids: new Set() }));
        for (const c of suite.cases) user.uids.add(c.request.uid);
      }
    }
    const recordings = new Map<string, RecordingIndex>();
    for (const [file, { suite, field, uids }] of users) {
      try {
        recordings.set(file, indexOf(await readRecording(file, uids)));
      } catch (err) {
        if (!(err instanceof RecordingFileError)) throw err;
        throw locateConfigError(new ConfigError(suite.file, field, err.message), suite.file, suite.locate);
      }
    }
    return new RecordedAnswers(recordings);
  }

  /** The answers of recording `file` whose lines are already read. */
  static of(file: string, lines: readonly RecordedLine[]): RecordedAnswers {
    return new RecordedAnswers(new Map([[file, indexOf(lines)]]));
  }

  /** The recorded review of `uid` in which `step` answered in `phase`, ready to answer it again. */
  find(recording: string, step: string, uid: string, phase: Phase): OfflineAnswers | undefined {
    for (const { review, line } of this.recordings.get(recording)?.get(uid) ?? []) {
      if (review.phase !== phase) continue;
      const answers = new OfflineAnswers();
      answers.replaying(review, line);
      if (answers.answerOf(step)) return answers;
    }
    return undefined;
  }
}

/**
 * The chain with its provider steps answering for the case in play: from a recording when it has the step's
 * answer, else through the step itself (and so the provider's stand-in). Each tells the case which phase runs.
 */
export function chainForCases(
  chain: Chain,
  providerOf: ReadonlyMap<string, string>,
  deps: { readonly suite: TestSuite; readonly play: CaseInPlay; readonly recorded: RecordedAnswers },
): Chain {
  const answering = (step: Step): Step => {
    const from = deps.suite.providers.get(providerOf.get(step.name) ?? '')?.from;
    return {
      ...step,
      invoke(invocation) {
        deps.play.phase = step.phase;
        const uid = deps.play.uid;
        const recorded =
          from !== undefined && uid !== undefined && deps.recorded.find(from, step.name, uid, step.phase);
        return recorded ? offlineStep(step, recorded).invoke(invocation) : step.invoke(invocation);
      },
    };
  };
  return createChain(
    chain.steps.map((step) => (step.source === 'provider' ? answering(step) : step)),
    chain.authorize,
  );
}
