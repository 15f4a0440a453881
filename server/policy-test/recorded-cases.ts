/**
 * The cases of a recording (`test --from-recording`): one per recorded review, its request as recorded
 * (redacted as the recording is), reviewed on the route that answered it, expecting nothing yet: what the
 * config answers is pinned once it has run (suite-writer.ts). Read in batches, so that only one batch of the
 * recording is held at a time.
 */
import { describeRequest } from '../recording/review-diff.js';
import { ROUTES } from '../http/routes.js';
import { recordedReviews, type RecordedLine } from '../recording/recording-file.js';
import type { CaseRoute, Expectation, TestCase } from './suite.js';

const NOTHING: Expectation = { warningsMatch: 'subset', auditAnnotationsMatch: 'subset', patchedMatch: 'subset' };

/** The cases of recording `file`, `size` at a time, each batch with the recorded lines its providers answer from. */
export async function* recordedCaseBatches(
  file: string,
  size: number,
): AsyncGenerator<{ cases: TestCase[]; lines: RecordedLine[] }> {
  let cases: TestCase[] = [];
  let lines: RecordedLine[] = [];
  for await (const recorded of recordedReviews(file, ROUTES)) {
    const { request, route } = recorded.review;
    const { line } = recorded;
    lines.push(recorded);
    cases.push({
      name: `line ${line}: ${describeRequest(request)} on ${route}`,
      field: `cases[${cases.length}]`,
      request,
      route: route as CaseRoute,
      expect: NOTHING,
    });
    if (cases.length === size) {
      yield { cases, lines };
      cases = [];
      lines = [];
    }
  }
  if (cases.length > 0) yield { cases, lines };
}
