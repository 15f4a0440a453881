#!/usr/bin/env node
/** Process entry point: wires the CLI to the real process (stdio, env, signals, exit code). */
import { runCli } from './cli.js';

/** After the command returned, how long pending output may take before the process exits anyway. */
const EXIT_GRACE_MS = 500;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

// A plugin bug in a detached callback must not take the cluster's admission path down with it.
process.on('unhandledRejection', (reason) => {
  process.stderr.write(`${JSON.stringify({ level: 'error', msg: 'unhandled rejection', err: String(reason) })}\n`);
});
process.on('uncaughtException', (err) => {
  process.stderr.write(
    `${JSON.stringify({ level: 'error', msg: 'uncaught exception', err: err.stack ?? String(err) })}\n`,
  );
});

/**
 * Resolves on the first SIGTERM/SIGINT once `serve` waits for it; a second one means "now": exit without
 * draining (the listeners stay, so the default action — death by signal — never cuts a drain short).
 */
function stopSignal(): Promise<string> {
  return new Promise((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals++;
      if (signals === 1) return resolve(signal);
      process.stderr.write(`${JSON.stringify({ level: 'warn', msg: `second ${signal}: exiting without draining` })}\n`);
      process.exit(1);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdin: readStdin,
  env: process.env,
  cwd: process.cwd(),
  stopSignal,
});
process.exitCode = code;
// `serve` returns once drained or cut at server.shutdownTimeoutSeconds; a provider call abandoned at the
// bound may still hold a socket until its own timeout. Let output flush, then go regardless.
setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
