import type { AdmissionApiVersion } from './types.js';

/** A request body that is not a usable AdmissionReview; `status` is the HTTP status to answer with. */
export class ReviewDecodeError extends Error {
  readonly code = 'GW_ERR_REVIEW_DECODE';
  constructor(
    message: string,
    readonly status: 400 | 408 | 413 | 415,
    /** The request uid when it could be read, so the answer can still echo it. */
    readonly uid = '',
    readonly apiVersion?: AdmissionApiVersion,
  ) {
    super(message);
    this.name = 'ReviewDecodeError';
  }
}
