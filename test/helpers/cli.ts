/**
 * Runs the CLI in this process through the entry the binary uses (server/cli.ts runCli), with captured
 * standard streams and without GATEWAY_CONFIG from the environment. `serve` is not run this way: it waits
 * for a signal; the process-level tests spawn it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnyPlugin } from '../../server/chain/plugin-registry.js';
import { runCli } from '../../server/cli.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runCliCaptured(
  args: readonly string[],
  options: { stdin?: string; cwd?: string; plugins?: readonly AnyPlugin[]; env?: NodeJS.ProcessEnv } = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const env = { ...(options.env ?? process.env) };
  delete env.GATEWAY_CONFIG;
  const code = await runCli(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    stdin: () => Promise.resolve(options.stdin ?? ''),
    env,
    cwd: options.cwd ?? REPO_ROOT,
    stopSignal: () => Promise.reject(new Error('serve is only run as a process in these tests')),
    ...(options.plugins ? { plugins: options.plugins } : {}),
  });
  return { code, stdout, stderr };
}

/** A test's own temporary folder, and `config(text)`, which writes its gateway.yaml there. */
export interface ConfigFolder {
  readonly dir: string;
  config(text: string): Promise<string>;
}

/** A fresh temporary folder for each test of the enclosing `describe`, removed after it. */
export function configFolderPerTest(prefix: string): ConfigFolder {
  let dir = '';
  beforeEach(async function () {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterEach(async function () {
    await rm(dir, { recursive: true, force: true });
  });
  return {
    get dir() {
      return dir;
    },
    async config(text) {
      const file = join(dir, 'gateway.yaml');
      await writeFile(file, text);
      return file;
    },
  };
}
