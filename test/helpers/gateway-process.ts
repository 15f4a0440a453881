/**
 * The gateway as a real operating-system process (`admission-gateway serve`, or `provider`), the way a
 * container runs it: started with a command line, stopped with a signal, judged by its exit code and its log
 * lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface GatewayProcess {
  readonly child: ChildProcess;
  /** https://127.0.0.1:<port> and http://127.0.0.1:<port>, from the "admission-gateway serving" log line. */
  readonly webhook: string;
  readonly ops: string;
  /** The health server (/healthz, /readyz). */
  readonly health: string;
  /** Everything written to standard output / error so far. */
  stdout(): string;
  stderr(): string;
  /** The JSON log lines so far, parsed (lines that are not JSON are skipped). */
  logs(): Record<string, unknown>[];
  /** Resolves with the exit code (null when a signal ended the process) once it has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILLs the process if it is still running (for `finally` blocks). */
  kill(): void;
}

export interface SpawnGatewayOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  /** How long to wait for the "serving" line. Default 30 s (a loaded machine starts tsx slowly). */
  readonly startTimeoutMs?: number;
}

function parseLines(text: string): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line still being written
    }
  }
  return lines;
}

/** A process of the command line, started and judged by its JSON log lines. */
export interface LoggedProcess {
  readonly child: ChildProcess;
  /** The log line that said it was serving. */
  readonly serving: Record<string, unknown>;
  stdout(): string;
  stderr(): string;
  logs(): Record<string, unknown>[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): void;
}

/**
 * Starts the process and resolves once it logs the line `message` (its `msg`); rejects (and kills it) when
 * it exits first or not in time.
 */
export async function spawnLogged(options: SpawnGatewayOptions, message: string): Promise<LoggedProcess> {
  const env = { ...(options.env ?? process.env) };
  delete env.GATEWAY_CONFIG;
  const child = spawn(options.command, [...options.args], { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const quoted = JSON.stringify(message);
  const serving = new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the process did not log ${quoted} in time:\n${stdout}\n${stderr}`)),
      options.startTimeoutMs ?? 30_000,
    );
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const seen = stdout.includes(quoted);
      stdout += chunk;
      const line = seen ? undefined : parseLines(stdout).find((l) => l.msg === message);
      if (line) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.once('error', reject);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the process exited (${code ?? signal}) before logging ${quoted}:\n${stdout}\n${stderr}`));
    });
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  try {
    return {
      child,
      serving: await serving,
      stdout: () => stdout,
      stderr: () => stderr,
      logs: () => parseLines(stdout),
      exited,
      kill,
    };
  } catch (err) {
    kill();
    throw err;
  }
}

/** `serve`'s command line after node's own options: the main module, the config, every port the system's choice. */
export function serveArgs(main: string, configFile: string): string[] {
  return [main, 'serve', '--config', configFile, '--port', '0', '--ops-port', '0', '--health-port', '0'];
}

/** Starts `serve` and resolves once it logs that it is serving; rejects (and kills it) otherwise. */
export async function spawnGateway(options: SpawnGatewayOptions): Promise<GatewayProcess> {
  const started = await spawnLogged(options, 'admission-gateway serving');
  const { serving, ...rest } = started;
  return { ...rest, webhook: String(serving.webhook), ops: String(serving.ops), health: String(serving.health) };
}
