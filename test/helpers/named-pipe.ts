/**
 * Named pipes (FIFOs) for tests of files the gateway reads at start: opening one for reading blocks until a
 * writer comes, so a reader that does not refuse it hangs. `release` plays the writer once, so that a reader
 * still blocked (the code before a fix) gets end-of-file and the test process can exit.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';

export function makeNamedPipe(file: string): void {
  execFileSync('mkfifo', [file]);
}

export function releaseNamedPipe(file: string): void {
  try {
    closeSync(openSync(file, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // ENXIO: nobody is reading it; ENOENT: already removed
  }
}
