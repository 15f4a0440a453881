/**
 * The two ends of a provider call that are computation, not I/O: the AdmissionReview sent (a fresh uid, the
 * object as the chain has it, down-converted to the version called in, and the request target) and the
 * verification of the bytes answered. The main lane's client runs both around its exchange of bytes; a worker of
 * the large-review lane runs both itself and has the main thread exchange the bytes (docs/decisions.md).
 */
import { randomUUID } from 'node:crypto';
import type { AdmissionApiVersion, AdmissionRequest, KubeObject } from '../admission/types.js';
import { ProviderCallError } from '../base/errors.js';
import { downConvertRequest } from '../protocol/conversion.js';
import { InvalidProviderResponse, verifyProviderResponse, type ProviderAnswer } from './provider-response.js';

/** What a call sends, before it is made bytes. */
export interface ProviderCallInput {
  readonly request: AdmissionRequest;
  /** The object as the chain has it so far. */
  readonly object: KubeObject | null | undefined;
  readonly mutating: boolean;
  /** The time granted, sent as `?timeout=`. */
  readonly timeoutMs: number;
  /** Absolute path to POST to instead of the URL's (a discovered handler). */
  readonly path?: string;
  /** The version to call in, when it differs from the target's (a discovered handler's). */
  readonly apiVersion?: AdmissionApiVersion;
}

/** A call made bytes: where it goes, what it sends, and what its answer must echo. */
export interface EncodedProviderCall {
  readonly uid: string;
  readonly apiVersion: AdmissionApiVersion;
  readonly mutating: boolean;
  /** The request target, `?timeout=` included. */
  readonly path: string;
  readonly body: string;
}

export interface ProviderCodec {
  encode(call: ProviderCallInput): EncodedProviderCall;
  /** The answer in `bytes` (a 200's body), verified; a ProviderCallError `invalid_response` when it is not one. */
  verify(bytes: Uint8Array, call: EncodedProviderCall): ProviderAnswer;
}

export function grantedTimeout(ms: number): string {
  return `${Math.max(1, Math.floor(ms))}ms`;
}

/** A request target must be visible ASCII; percent-encode anything else as UTF-8 (a discovered handler's path). */
export function requestTarget(path: string): string {
  if (/^[\x21-\x7e]*$/.test(path)) return path;
  return path.replace(/[^\x21-\x7e]/gu, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

export function createProviderCodec(target: {
  readonly url: string;
  readonly apiVersion: AdmissionApiVersion;
}): ProviderCodec {
  const baseTarget = requestTarget(new URL(target.url).pathname || '/');
  /** Each discovered handler's request target, encoded on its first call (a provider has a handful). */
  const handlerTargets = new Map<string, string>();
  const targetOf = (handlerPath: string): string => {
    let encoded = handlerTargets.get(handlerPath);
    if (encoded === undefined) handlerTargets.set(handlerPath, (encoded = requestTarget(handlerPath)));
    return encoded;
  };
  return {
    encode({ request, object, mutating, timeoutMs, path: handlerPath, apiVersion = target.apiVersion }) {
      const uid = randomUUID();
      const body = JSON.stringify(downConvertRequest({ ...request, uid, object: object ?? null }, apiVersion));
      const path = `${handlerPath === undefined ? baseTarget : targetOf(handlerPath)}?timeout=${grantedTimeout(timeoutMs)}`;
      return { uid, apiVersion, mutating, path, body };
    },
    verify(bytes, { uid, apiVersion, mutating }) {
      const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
      try {
        return verifyProviderResponse(text, { uid, apiVersion, mutating });
      } catch (err) {
        if (err instanceof InvalidProviderResponse) {
          throw new ProviderCallError('invalid_response', `${target.url}: ${err.message}`, { cause: err });
        }
        throw err;
      }
    },
  };
}
