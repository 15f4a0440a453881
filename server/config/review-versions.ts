/** Reads a list of AdmissionReview versions (`admissionReviewVersions`): gateway.yaml, AdmissionProviders, discovery. */
import { REVIEW_VERSIONS, type ReviewVersion } from '../protocol/versions.js';
import { childPath, type Reader } from './reader.js';

/** The versions at `path`, duplicates dropped, order kept; undefined when absent. */
export function readReviewVersions(r: Reader, value: unknown, path: string): ReviewVersion[] | undefined {
  const versions = r.stringList(value, path);
  if (versions === undefined) return undefined;
  if (versions.length === 0) r.fail(path, `expected some of ${REVIEW_VERSIONS.join(', ')}`);
  versions.forEach((v, i) => r.oneOf(v, childPath(path, i), REVIEW_VERSIONS));
  return [...new Set(versions as ReviewVersion[])];
}
