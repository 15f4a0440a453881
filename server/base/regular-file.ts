/**
 * Reading a file the configuration or the command line names (the config itself, certificates and keys): a
 * regular file only, and at most a bounded number of bytes of it. A path may name anything: /dev/zero never
 * ends, so reading it fills memory until the process dies; opening a named pipe waits for a writer, so the
 * start hangs; a mistaken path to a large file is read whole. Each is refused before the gateway starts,
 * with the reason (the caller adds which file and what it was for).
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Stats } from 'node:fs';

/** What a path names when it is not a regular file, for the message. */
function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

/** Refuses what is not a regular file of at most `maxBytes`, saying why. */
function checkRegular(stats: Stats, maxBytes: number): void {
  if (!stats.isFile()) throw new Error(`not a regular file (${kindOf(stats)})`);
  if (stats.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes (${stats.size})`);
}

/**
 * The bytes of `file`, which must be a regular file of at most `maxBytes`. Throws an Error saying why not
 * (`not a regular file (a FIFO)`, `larger than 1048576 bytes (2097152)`), or the open's own error (ENOENT …).
 */
export async function readRegularFile(file: string, maxBytes: number): Promise<Buffer> {
  // Non-blocking, so that opening a named pipe returns at once (and is then refused) instead of waiting.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    checkRegular(stats, maxBytes);
    // One byte more than the stat says: a file that grew since is refused, not cut.
    const buffer = Buffer.alloc(stats.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > stats.size) throw new Error('changed while it was read');
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/**
 * readRegularFile() for a caller that cannot wait (a chain built synchronously at start): the same checks, the
 * same errors.
 */
export function readRegularFileSync(file: string, maxBytes: number): Buffer {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    checkRegular(stats, maxBytes);
    const buffer = Buffer.alloc(stats.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const bytesRead = readSync(fd, buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > stats.size) throw new Error('changed while it was read');
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}
