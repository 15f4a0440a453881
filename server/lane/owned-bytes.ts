/**
 * Bytes that cross between the main thread and a worker of the large-review lane by transfer, not by copy: a
 * Uint8Array that owns the whole of its ArrayBuffer (whose transfer then detaches nothing else).
 */

/** `bytes` when it owns its whole ArrayBuffer, else a copy that does (a slice of a pooled buffer must not move). */
export function ownedBytes(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const { buffer } = bytes;
  if (buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength) {
    return new Uint8Array(buffer, 0, bytes.byteLength);
  }
  return new Uint8Array(bytes);
}
