/**
 * A lane worker's scheduling priority. A large review holds its worker for hundreds of milliseconds of CPU; when
 * the pod has one core, the kernel shares it evenly between that worker and the event loop, so ordinary reviews
 * wait behind the large one. A worker with a higher niceness yields the core whenever the event loop has work,
 * and still has all of it otherwise.
 */
import { setPriority } from 'node:os';
import { errorMessage } from '../base/errors.js';

/**
 * Raises the calling thread's niceness to `niceness` (0 leaves it). On Linux every thread is a task of its own and
 * setpriority(PRIO_PROCESS, 0) reaches only the calling one; elsewhere it would reach the whole process, the event
 * loop too, so there nothing is done. Returns why it could not, or undefined.
 */
export function lowerThreadPriority(
  niceness: number,
  platform: NodeJS.Platform = process.platform,
  set: (pid: number, priority: number) => void = setPriority,
): string | undefined {
  if (niceness === 0) return undefined;
  if (platform !== 'linux') return `not on ${platform}: it would lower the event loop's priority too`;
  try {
    set(0, niceness);
    return undefined;
  } catch (err) {
    return errorMessage(err);
  }
}
