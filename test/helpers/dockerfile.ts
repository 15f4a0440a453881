/**
 * The Dockerfile, carried out without a Docker engine: its stages are parsed and each instruction is done
 * in a directory standing for that stage's filesystem root — COPY from the build context (the files of a
 * clean checkout, minus .dockerignore) or from an earlier stage, RUN through the shell with the stage's
 * WORKDIR and ENV, and the final stage's ENTRYPOINT/CMD as the command to start. The Dockerfile stays the
 * one place the production recipe is written; the production-install test follows it line by line, so the
 * two cannot drift.
 */
import { spawn } from 'node:child_process';
import { cp, mkdir, readFile, stat, symlink } from 'node:fs/promises';
import path from 'node:path';

export interface Instruction {
  readonly keyword: string;
  /** The rest of the line (continuations joined). */
  readonly args: string;
  readonly line: number;
}

export interface Stage {
  /** `AS <name>`, or the stage's index. */
  readonly name: string;
  readonly image: string;
  readonly instructions: readonly Instruction[];
}

/** Parses a Dockerfile into stages (comments, blank lines and `\` continuations handled). */
export function parseDockerfile(text: string): Stage[] {
  const stages: { name: string; image: string; instructions: Instruction[] }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1).trim()} ${lines[++i]!.trim()}`;
    const space = line.search(/\s/);
    const keyword = (space < 0 ? line : line.slice(0, space)).toUpperCase();
    const args = space < 0 ? '' : line.slice(space + 1).trim();
    if (keyword === 'FROM') {
      const [image = '', as, name] = args.split(/\s+/);
      stages.push({
        name: as?.toUpperCase() === 'AS' && name ? name : String(stages.length),
        image,
        instructions: [],
      });
      continue;
    }
    const current = stages.at(-1);
    if (!current) throw new Error(`Dockerfile line ${start + 1}: ${keyword} before any FROM`);
    current.instructions.push({ keyword, args, line: start + 1 });
  }
  return stages;
}

/** `["a", "b"]` (exec form) or a shell-form string. */
function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
    throw new Error(`expected a JSON array of strings, got ${args}`);
  }
  return parsed;
}

/** A `.dockerignore` pattern (`*` within one path segment; a match also excludes everything below it). */
function ignoreMatcher(patterns: readonly string[]): (file: string) => boolean {
  const regexes = patterns.map((p) => {
    const body = p
      .replace(/^\/+|\/+$/g, '')
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]*');
    return new RegExp(`^${body}(/.*)?$`);
  });
  return (file) => regexes.some((r) => r.test(file));
}

export interface BuildContext {
  /** The directory the image is built from (the repository). */
  readonly dir: string;
  /** The files of a clean checkout, relative to `dir` with `/` separators. */
  readonly files: readonly string[];
}

export interface CarryOutOptions {
  readonly dockerfile: string;
  readonly context: BuildContext;
  /** Where the stages' filesystems are made, one directory per stage. */
  readonly workDir: string;
  /**
   * Stands in for a RUN instruction (return true when done): e.g. the build stage's dependency install,
   * which `npm ci` from the same lockfile made in the checkout already.
   */
  readonly substitute?: (stage: Stage, command: string, cwd: string) => Promise<boolean>;
  /** Output of RUN commands. */
  readonly log?: (text: string) => void;
}

export interface Image {
  /** The final stage's filesystem root. */
  readonly root: string;
  /** Its WORKDIR, as a path under `root`. */
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  /** `USER` of the final stage ('' when unset: root). */
  readonly user: string;
  /** ENTRYPOINT + CMD (exec form), as the container would start. */
  readonly command: readonly string[];
  readonly baseImage: string;
  /** Every instruction keyword of the final stage, in order. */
  readonly keywords: readonly string[];
}

function run(command: string, cwd: string, env: NodeJS.ProcessEnv, log: (text: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      log(output);
      if (code === 0) resolve();
      else reject(new Error(`RUN ${command} (in ${cwd}) exited ${code}:\n${output}`));
    });
  });
}

/** What an image's ENTRYPOINT is when the Dockerfile sets none: distroless/nodejs starts node. */
function baseEntrypoint(image: string): string[] {
  return /distroless\/nodejs/.test(image) ? [process.execPath] : [];
}

/**
 * Carries out every stage of the Dockerfile and returns the final one. COPY sources from the context must
 * be files of the clean checkout (what `docker build` on a fresh clone would see), so a COPY of an
 * untracked or ignored file fails here as it would there.
 */
export async function carryOutDockerfile(options: CarryOutOptions): Promise<Image> {
  const stages = parseDockerfile(options.dockerfile);
  const log = options.log ?? (() => undefined);
  const ignored = ignoreMatcher(
    (await readFile(path.join(options.context.dir, '.dockerignore'), 'utf8').catch(() => ''))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#')),
  );
  const contextFiles = options.context.files.filter((f) => !ignored(f));
  const roots = new Map<string, string>();
  let image: Image | undefined;

  for (const [index, stage] of stages.entries()) {
    const root = path.join(options.workDir, `stage-${index}-${stage.name}`);
    await mkdir(root, { recursive: true });
    roots.set(stage.name, root);
    let workdir = '/';
    const env: Record<string, string> = {};
    let user = '';
    let entrypoint = baseEntrypoint(stage.image);
    let cmd: string[] = [];
    const inStage = (p: string) => path.join(root, path.posix.resolve(workdir, p));

    for (const ins of stage.instructions) {
      const where = `Dockerfile line ${ins.line} (${ins.keyword} ${ins.args})`;
      switch (ins.keyword) {
        case 'WORKDIR':
          workdir = path.posix.resolve(workdir, ins.args);
          await mkdir(inStage('.'), { recursive: true });
          break;
        case 'ENV':
          for (const m of ins.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, '');
          break;
        case 'USER':
          user = ins.args;
          break;
        case 'EXPOSE':
          break;
        case 'ENTRYPOINT':
          entrypoint = execForm(ins.args) ?? ['/bin/sh', '-c', ins.args];
          break;
        case 'CMD':
          cmd = execForm(ins.args) ?? ['/bin/sh', '-c', ins.args];
          break;
        case 'RUN': {
          const cwd = inStage('.');
          if (await options.substitute?.(stage, ins.args, cwd)) break;
          await run(ins.args, cwd, { ...process.env, ...env }, log);
          break;
        }
        case 'COPY': {
          const words = ins.args.split(/\s+/);
          const from = words[0]?.startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
          if (words.some((w) => w.startsWith('--'))) throw new Error(`${where}: unsupported COPY flag`);
          const dest = words.pop();
          if (!dest || words.length === 0) throw new Error(`${where}: expected COPY <src>... <dest>`);
          const intoDir = dest.endsWith('/') || words.length > 1;
          for (const src of words) {
            const target = intoDir ? path.join(inStage(dest), path.posix.basename(src)) : inStage(dest);
            if (from !== undefined) {
              const fromRoot = roots.get(from);
              if (!fromRoot) throw new Error(`${where}: no earlier stage "${from}"`);
              await cp(path.join(fromRoot, src), target, { recursive: true, verbatimSymlinks: true });
              continue;
            }
            const rel = path.posix.normalize(src).replace(/\/$/, '');
            const files = contextFiles.filter((f) => f === rel || f.startsWith(`${rel}/`));
            if (files.length === 0) {
              throw new Error(`${where}: "${src}" is not in a clean checkout (untracked, ignored or missing)`);
            }
            for (const file of files) {
              const out = file === rel ? target : path.join(target, file.slice(rel.length + 1));
              await mkdir(path.dirname(out), { recursive: true });
              await cp(path.join(options.context.dir, file), out);
            }
          }
          break;
        }
        default:
          throw new Error(`${where}: instruction not supported by this emulation`);
      }
    }
    image = {
      root,
      workdir: inStage('.'),
      env,
      user,
      command: [...entrypoint, ...cmd],
      baseImage: stage.image,
      keywords: stage.instructions.map((i) => i.keyword),
    };
  }
  if (!image) throw new Error('the Dockerfile has no stage');
  return image;
}

/** For `substitute`: links `node_modules` of `from` into `cwd` (the same lockfile installed). */
export async function linkNodeModules(from: string, cwd: string): Promise<void> {
  const source = path.join(from, 'node_modules');
  await stat(source);
  await symlink(source, path.join(cwd, 'node_modules'), 'dir');
}
