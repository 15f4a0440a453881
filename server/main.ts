#!/usr/bin/env node
/** Process entry point: wires the CLI to the real process (stdio, env, signals, exit code). */
import { runCli } from './cli.js';

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

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdin: readStdin,
  env: process.env,
  cwd: process.cwd(),
  stopSignal: () =>
    new Promise((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    }),
});
process.exitCode = code;
