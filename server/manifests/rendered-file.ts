/** Writing a file `manifests` renders for the control plane (kubeconfigs, apiserver configurations). */
import { writeFile } from 'node:fs/promises';
import { errorMessage } from '../base/errors.js';
import { ManifestsUsageError } from './usage-error.js';

/** Writes `text` to `file`; a failure is a usage error naming `--flag`. */
export async function writeRendered(file: string, text: string, flag: string): Promise<void> {
  try {
    // 0600 as kubeconfigs are: they hold no secret unless someone adds one, but they decide who is trusted.
    await writeFile(file, text, { mode: 0o600 });
  } catch (err) {
    throw new ManifestsUsageError(`--${flag}: cannot write "${file}": ${errorMessage(err)}`);
  }
}
