/** Readable messages for client-node errors, whose ApiException text carries the whole response. */
import { errorMessage } from '../base/errors.js';

/**
 * `HTTP 404: the server could not find the requested resource` from an ApiException (code + Status body),
 * else the first line of the error's message.
 */
export function kubeErrorMessage(err: unknown): string {
  const { code, body } = (err ?? {}) as { code?: unknown; body?: unknown };
  if (typeof code === 'number') {
    let detail = '';
    if (typeof body === 'string') {
      try {
        const status = JSON.parse(body) as { message?: unknown };
        if (typeof status.message === 'string') detail = status.message;
      } catch {
        detail = body.slice(0, 200);
      }
    }
    return `HTTP ${code}${detail ? `: ${detail}` : ''}`;
  }
  return errorMessage(err).split('\n', 1)[0]!;
}

/** The HTTP status of a client-node ApiException, if `err` is one. */
export function statusCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}
