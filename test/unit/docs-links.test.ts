/**
 * The documentation travels with the repository: everything it links to or names is in the repository.
 *
 * - Every tracked Markdown file: each relative link resolves to a tracked file or directory without leaving
 *   the repository, each `#anchor` to a heading of the target file (GitHub's slugs); there is no link to the
 *   web at all (inline, reference, autolink, bare URL or HTML), since a reader with only a clone cannot follow
 *   it. Code blocks and code spans are not links.
 * - Every document a Markdown file or a source comment names (`docs/decisions.md`, `README.md`, a
 *   `../`-relative path) exists in the repository, and a section it quotes right after the name
 *   (`docs/decisions.md, "Log lines are written in batches"`, `README "Routes"`) is a heading there.
 * - Every repository path a comment or a Markdown code span names (`server/base/log.ts`) exists, or is one the
 *   repository ignores (generated files); a `.js` path may name its `.ts` source.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { CST, Lexer } from 'yaml';
import { COMMANDS } from '../../server/commands/usage.js';
import { TOP_LEVEL_FIELDS } from '../../server/config/validate.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** What the checks need of a repository: its tracked files, their text, and which paths it ignores. */
export interface Repo {
  /** Tracked files, relative to the root, with `/`. */
  readonly files: ReadonlySet<string>;
  /** Directories holding tracked files ('' is the root). */
  readonly dirs: ReadonlySet<string>;
  read(file: string): string;
  /** Whether git ignores the path (a generated file a document may name). */
  ignored(file: string): boolean;
}

/**
 * Paths the plugin tutorial (plugins/README.md) asks its reader to create: named on purpose, never in the
 * repository.
 */
const TUTORIAL_FILES = new Set(['plugins/max-replicas.ts', 'test/plugins/max-replicas.test.ts']);

function gitRepo(root: string): Repo {
  const files = new Set(
    execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
      .split('\0')
      .filter((f) => f && !f.startsWith('node_modules/')),
  );
  const ignoredCache = new Map<string, boolean>();
  return {
    files,
    dirs: directoriesOf(files),
    read: (file) => readFileSync(path.join(root, file), 'utf8'),
    ignored(file) {
      let ignored = ignoredCache.get(file);
      if (ignored === undefined) {
        try {
          execFileSync('git', ['check-ignore', '-q', '--no-index', file], { cwd: root, stdio: 'ignore' });
          ignored = true;
        } catch {
          ignored = false;
        }
        ignoredCache.set(file, ignored);
      }
      return ignored;
    },
  };
}

function directoriesOf(files: Iterable<string>): Set<string> {
  const dirs = new Set<string>(['']);
  for (const file of files) {
    for (let dir = path.posix.dirname(file); dir !== '.' && !dirs.has(dir); dir = path.posix.dirname(dir)) {
      dirs.add(dir);
    }
  }
  return dirs;
}

// ---------------------------------------------------------------------------------------------------------
// Markdown

/** The text with fenced code blocks blanked (their lines kept, empty), so offsets and line numbers hold. */
export function blankFencedCode(text: string): string {
  const lines = text.split('\n');
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*(`{3,}|~{3,})/.exec(lines[i]!);
    if (fence === undefined) {
      if (open) {
        fence = open[1]!;
        lines[i] = '';
      }
    } else {
      if (open && open[1]![0] === fence[0] && open[1]!.length >= fence.length && lines[i]!.trim() === open[1]) {
        fence = undefined;
      }
      lines[i] = '';
    }
  }
  return lines.join('\n');
}

/**
 * Splits text (fenced code already blanked) into prose, where code spans are blanked, and the code spans
 * themselves with their offsets. A span opens with a run of backticks and closes with a run of the same
 * length within its paragraph; an unmatched run is literal text.
 */
export function splitCodeSpans(text: string): { prose: string; spans: { text: string; at: number }[] } {
  const spans: { text: string; at: number }[] = [];
  let prose = '';
  let i = 0;
  while (i < text.length) {
    const tick = text.indexOf('`', i);
    if (tick < 0) {
      prose += text.slice(i);
      break;
    }
    prose += text.slice(i, tick);
    let n = tick;
    while (text[n] === '`') n++;
    const run = n - tick;
    const paragraphEnd = text.slice(n).search(/\n[ \t]*\n/);
    const limit = paragraphEnd < 0 ? text.length : n + paragraphEnd;
    let close = -1;
    for (let j = text.indexOf('`', n); j >= 0 && j < limit; j = text.indexOf('`', j)) {
      let k = j;
      while (text[k] === '`') k++;
      if (k - j === run) {
        close = j;
        break;
      }
      j = k;
    }
    if (close < 0) {
      prose += text.slice(tick, n);
      i = n;
      continue;
    }
    spans.push({ text: text.slice(n, close), at: n });
    // Blanked, newlines kept: offsets in `prose` are offsets in `text`.
    prose += text.slice(tick, close + run).replace(/[^\n]/g, ' ');
    i = close + run;
  }
  return { prose, spans };
}

/** GitHub's anchor for a heading's text (github-slugger): lower case, punctuation dropped, spaces to '-'. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/`/g, '')
    .replace(/<[^>]+>/g, '')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|[^\w])[*_](\S.*?)[*_](?=[^\w]|$)/g, '$1$2');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown file offers: its ATX headings' slugs (repeats numbered as GitHub does) and HTML ids. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of blankFencedCode(markdown).split('\n')) {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]!);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s[^>]*(?:name|id)\s*=\s*"([^"]+)"/gi)) anchors.add(m[1]!);
  }
  return anchors;
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** A path relative to `fromDir` (or to the root when it starts with '/'), or undefined when it leaves the root. */
function resolveInside(fromDir: string, target: string): string | undefined {
  const joined = target.startsWith('/') ? path.posix.normalize(target.slice(1)) : path.posix.join(fromDir, target);
  const normal = path.posix.normalize(joined).replace(/\/+$/, '');
  if (normal === '..' || normal.startsWith('../')) return undefined;
  return normal === '.' ? '' : normal;
}

function isTracked(repo: Repo, file: string): boolean {
  return repo.files.has(file) || repo.dirs.has(file);
}

/** The problems of one relative link target (`path`, `path#anchor` or `#anchor`) from `file`. */
function checkLinkTarget(repo: Repo, file: string, rawTarget: string): string | undefined {
  let target = rawTarget.trim();
  if (target.startsWith('<') && target.endsWith('>')) target = target.slice(1, -1);
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) {
    return `links outside the repository: ${target}`;
  }
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = pathPart === '' ? file : resolveInside(path.posix.dirname(file), pathPart.split('?')[0]!);
  if (resolved === undefined) return `leaves the repository: ${target}`;
  if (!isTracked(repo, resolved)) return `no such file in the repository: ${target}`;
  if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(repo.read(resolved)).has(anchor)) {
    return `no heading #${anchor} in ${resolved}`;
  }
  return undefined;
}

/** Every problem with the links of one Markdown file, as `file:line: problem`. */
export function checkMarkdown(repo: Repo, file: string): string[] {
  const original = repo.read(file);
  const text = blankFencedCode(original);
  const { prose, spans } = splitCodeSpans(text);
  const problems: string[] = [];
  const report = (at: number, problem: string) => problems.push(`${file}:${lineAt(text, at)}: ${problem}`);

  const targets: { target: string; at: number }[] = [];
  // Inline links and images, with an optional title: [text](target "title").
  for (const m of prose.matchAll(/\]\(\s*(<[^>\n]*>|[^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)) {
    targets.push({ target: m[1]!, at: m.index });
  }
  // Reference definitions: [label]: target.
  for (const m of prose.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*(\S+)/gm)) targets.push({ target: m[1]!, at: m.index });
  // HTML links and images.
  for (const m of prose.matchAll(/\b(?:href|src)\s*=\s*["']([^"']*)["']/gi)) {
    targets.push({ target: m[1]!, at: m.index });
  }
  for (const { target, at } of targets) {
    const problem = checkLinkTarget(repo, file, target);
    if (problem) report(at, problem);
  }
  // Autolinks and bare URLs, which GitHub turns into links (those inside a link's target were reported above).
  const withoutTargets = prose.replace(/\]\([^)\n]*\)/g, (m) => m.replace(/[^\n]/g, ' '));
  for (const m of withoutTargets.matchAll(/<(?:https?|ftp|mailto):[^>\s]*>|\b(?:https?:\/\/|www\.)[^\s<>)]+/gi)) {
    report(m.index, `links outside the repository: ${m[0]}`);
  }
  // Documents and files named in the prose or in code spans.
  const flat = (s: string) => s.replace(/\n/g, ' ');
  for (const problem of checkMentions(repo, file, flat(withoutTargets), { paths: false })) {
    report(problem.at, problem.message);
  }
  for (const span of spans) {
    for (const problem of checkMentions(repo, file, flat(span.text), { paths: true })) {
      report(span.at + problem.at, problem.message);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------
// Documents and paths named in text

const DOC_MENTION = /(?<![\w/.@:-])((?:\.{1,2}\/)*(?:[\w.-]+\/)*[\w.-]+\.md)\b/g;
const README_SECTION = /(?<![\w/.-])README(?:\.md)?(?:'s)?,?\s+(?:section\s+)?["“]([^"”]+)["”]/g;
const QUOTED_SECTION = /^(?:'s)?,?\s+(?:section\s+)?(?:["“]([^"”]+)["”]|'([^']+)'(?!\w))/;
const PATH_MENTION = /(?<![\w/.@:~-])((?:\.{1,2}\/)*(?:[\w.-]+\/)+[\w.-]+\.(?:ts|mts|mjs|js|json|ya?ml|sh))(?![\w/-])/g;
const RELATIVE_MENTION = /(?<![\w/.-])((?:\.\.\/)+[\w.-]+(?:\/[\w.-]+)*\/?)/g;

/** The tracked file `mention` names from `file`: relative to the file's directory or any directory above it. */
function locate(repo: Repo, file: string, mention: string): string | undefined {
  for (let dir = path.posix.dirname(file); ; dir = path.posix.dirname(dir)) {
    const base = dir === '.' ? '' : dir;
    const resolved = resolveInside(base, mention);
    if (resolved !== undefined && isTracked(repo, resolved)) return resolved;
    if (base === '') return undefined;
  }
}

interface Mention {
  readonly at: number;
  readonly message: string;
}

/**
 * Problems with the documents, sections and (with `paths`) repository files that `text` names. `text` is one
 * comment, or a stretch of Markdown with its line breaks turned into spaces.
 */
export function checkMentions(repo: Repo, file: string, text: string, options: { paths: boolean }): Mention[] {
  const problems: Mention[] = [];
  const checkSection = (doc: string, quoted: string, at: number) => {
    const section = quoted.replace(/\s+/g, ' ').trim();
    const anchors = anchorsOf(repo.read(doc));
    if (!anchors.has(slug(section))) problems.push({ at, message: `no section "${section}" in ${doc}` });
  };
  for (const m of text.matchAll(DOC_MENTION)) {
    const doc = locate(repo, file, m[1]!);
    if (!doc) {
      problems.push({ at: m.index, message: `names a document that is not in the repository: ${m[1]}` });
      continue;
    }
    const quoted = QUOTED_SECTION.exec(text.slice(m.index + m[0].length));
    const section = quoted?.[1] ?? quoted?.[2];
    if (section) checkSection(doc, section, m.index);
  }
  for (const m of text.matchAll(README_SECTION)) {
    if (text.slice(m.index).startsWith('README.md')) continue; // checked as a document above
    const readmes: string[] = [];
    for (let dir = path.posix.dirname(file); ; dir = path.posix.dirname(dir)) {
      const candidate = dir === '.' ? 'README.md' : `${dir}/README.md`;
      if (repo.files.has(candidate)) readmes.push(candidate);
      if (dir === '.') break;
    }
    const section = m[1]!.replace(/\s+/g, ' ').trim();
    if (!readmes.some((readme) => anchorsOf(repo.read(readme)).has(slug(section)))) {
      problems.push({ at: m.index, message: `no section "${section}" in ${readmes.join(' or ') || 'any README'}` });
    }
  }
  for (const m of text.matchAll(RELATIVE_MENTION)) {
    const mention = m[1]!.replace(/[/.]+$/, '');
    if (resolveInside(path.posix.dirname(file), mention) === undefined) {
      problems.push({ at: m.index, message: `names a path outside the repository: ${mention}` });
    }
  }
  if (options.paths) {
    for (const m of text.matchAll(PATH_MENTION)) {
      const mention = m[1]!;
      // Only paths from the root (`server/base/log.ts`); `lib/x.ts` or `monitoring/y.yaml` may be examples.
      if (!repo.dirs.has(mention.split('/')[0]!) || TUTORIAL_FILES.has(mention)) continue;
      const found =
        locate(repo, file, mention) ??
        (mention.endsWith('.js') ? locate(repo, file, mention.replace(/\.js$/, '.ts')) : undefined);
      if (!found && !repo.ignored(mention)) {
        problems.push({ at: m.index, message: `names a file that is not in the repository: ${mention}` });
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------
// Comments

/** The comments of a TypeScript or JavaScript file, found by the parser (strings and regexes are not comments). */
export function scriptComments(fileName: string, text: string): { text: string; at: number }[] {
  const kind = /\.(m?js|cjs)$/.test(fileName) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, kind);
  const found = new Map<number, { text: string; at: number }>();
  const collect = (ranges: readonly ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) {
      if (found.has(range.pos)) continue;
      const raw = text.slice(range.pos, range.end);
      const body =
        range.kind === ts.SyntaxKind.SingleLineCommentTrivia
          ? raw.replace(/^\/\/\/?/, '')
          : raw
              .replace(/^\/\*\*?|\*\/$/g, '')
              .split('\n')
              .map((line) => line.replace(/^\s*\*?/, ''))
              .join(' ');
      found.set(range.pos, { text: body, at: range.pos });
    }
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return mergeLineComments(text, [...found.values()], '//');
}

/**
 * Line comments on consecutive lines read as one comment, so that a document's name and its quoted section
 * may be on two lines.
 */
function mergeLineComments(
  text: string,
  comments: { text: string; at: number }[],
  marker: string,
): { text: string; at: number }[] {
  const merged: { text: string; at: number; end: number }[] = [];
  for (const comment of comments.sort((a, b) => a.at - b.at)) {
    const end = text.startsWith(marker, comment.at)
      ? (text.indexOf('\n', comment.at) + 1 || text.length + 1) - 1
      : text.indexOf('*/', comment.at) + 2;
    const last = merged[merged.length - 1];
    const between = last ? text.slice(last.end, comment.at) : '';
    if (last && text.startsWith(marker, comment.at) && /^[ \t]*\n[ \t]*$/.test(between)) {
      last.text += ` ${comment.text}`;
      last.end = end;
    } else merged.push({ ...comment, end });
  }
  return merged.map(({ text: body, at }) => ({ text: body, at }));
}

/** The comments of a YAML file, found by its lexer (a `#` inside a quoted or plain value is not a comment). */
export function yamlComments(text: string): { text: string; at: number }[] {
  const comments: { text: string; at: number }[] = [];
  let at = 0;
  for (const token of new Lexer().lex(text)) {
    if (CST.tokenType(token) === 'comment') comments.push({ text: token.replace(/^#/, ''), at });
    at += token.length;
  }
  return mergeLineComments(text, comments, '#');
}

/** `#` comment lines of a shell script or Dockerfile (whole lines only). */
function hashLineComments(text: string): { text: string; at: number }[] {
  const comments: { text: string; at: number }[] = [];
  let offset = 0;
  let previousWasComment = false;
  for (const line of text.split('\n')) {
    const m = /^\s*#(?!!)(.*)$/.exec(line);
    if (m) {
      if (previousWasComment) comments[comments.length - 1]!.text += ` ${m[1]}`;
      else comments.push({ text: m[1]!, at: offset });
    }
    previousWasComment = !!m;
    offset += line.length + 1;
  }
  return comments;
}

function commentsOf(file: string, text: string): { text: string; at: number }[] | undefined {
  if (/\.(ts|mts|mjs|js|cjs)$/.test(file)) return scriptComments(file, text);
  if (/\.ya?ml$/.test(file)) return yamlComments(text);
  if (/(^|\/)Dockerfile$|\.sh$|^\.ci\/run$/.test(file)) return hashLineComments(text);
  return undefined;
}

/** Every problem with what the comments of `file` name, as `file:line: problem`. */
export function checkComments(repo: Repo, file: string): string[] {
  const text = repo.read(file);
  const problems: string[] = [];
  for (const comment of commentsOf(file, text) ?? []) {
    for (const problem of checkMentions(repo, file, comment.text, { paths: true })) {
      problems.push(`${file}:${lineAt(text, comment.at)}: ${problem.message}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------

/** The anchors the contents of a Markdown file link to: its list of `#` links before its first `##` heading. */
export function contentsOf(markdown: string): Set<string> {
  const text = blankFencedCode(markdown);
  const end = text.search(/^## /m);
  const head = end < 0 ? text : text.slice(0, end);
  return new Set([...head.matchAll(/^\s*[-*] \[[^\]\n]*\]\(#([^)\s]+)\)/gm)].map((m) => decodeURIComponent(m[1]!)));
}

/** The anchors of a Markdown file's `##` headings, in order. */
export function sectionsOf(markdown: string): string[] {
  return [...blankFencedCode(markdown).matchAll(/^## +(.*?)[ \t]*$/gm)].map((m) => slug(m[1]!));
}

// ---------------------------------------------------------------------------------------------------------

/** A repository held in memory, for the checks' own tests. */
function memoryRepo(files: Record<string, string>): Repo {
  return {
    files: new Set(Object.keys(files)),
    dirs: directoriesOf(Object.keys(files)),
    read: (file) => {
      const text = files[file];
      if (text === undefined) throw new Error(`no file ${file}`);
      return text;
    },
    ignored: (file) => file.startsWith('generated/'),
  };
}

describe('documentation stays inside the repository', () => {
  const repo = gitRepo(ROOT);

  it('every tracked Markdown file links only to files and headings in the repository, never to the web', () => {
    const markdown = [...repo.files].filter((f) => f.endsWith('.md'));
    assert.ok(markdown.includes('README.md') && markdown.includes('docs/configuration.md'), markdown.join(', '));
    assert.deepEqual(
      markdown.flatMap((file) => checkMarkdown(repo, file)),
      [],
    );
  });

  it('every document, section and file a comment names is in the repository', function () {
    this.timeout(60_000); // parses every source file
    const sources = [...repo.files].filter((f) => commentsOf(f, '') !== undefined && !f.startsWith('test/fixtures/'));
    // The directories that must be covered, at least.
    for (const dir of ['server/', 'plugins/', 'certs/', 'manifests/', 'bench/', 'scripts/']) {
      assert.ok(
        sources.some((f) => f.startsWith(dir)),
        `no file of ${dir} scanned`,
      );
    }
    assert.deepEqual(
      sources.flatMap((file) => checkComments(repo, file)),
      [],
    );
  });

  describe('docs/configuration.md', () => {
    const doc = repo.read('docs/configuration.md');
    const contents = contentsOf(doc);

    it('has a section for each top-level field of gateway.yaml, and its contents list every section', () => {
      const sections = sectionsOf(doc);
      const fields = TOP_LEVEL_FIELDS.filter((f) => f !== 'apiVersion' && f !== 'kind');
      assert.deepEqual(
        {
          fieldsWithoutSection: fields.filter((f) => !sections.includes(slug(`\`${f}\``))),
          sectionsNotInContents: sections.filter((s) => !contents.has(s)),
        },
        { fieldsWithoutSection: [], sectionsNotInContents: [] },
      );
    });

    it('names every command in its contents and in the table of commands', () => {
      const head = doc.slice(0, doc.search(/^## /m));
      assert.deepEqual(
        {
          notInContents: COMMANDS.filter((c) => !head.includes(`\`${c}\``)),
          noRow: COMMANDS.filter((c) => !new RegExp(`^\\| \`${c}[\` ]`, 'm').test(doc)),
        },
        { notInContents: [], noRow: [] },
      );
    });
  });

  describe('the checks themselves', () => {
    const target = '# Target\n\n## Where the time goes\n\n## Step `one` (`large`)\n\n## Step one\n';

    it('find a broken link, an escaping one, a web link and a missing heading', () => {
      const r = memoryRepo({
        'docs/a.md': [
          'See [b](b.md), [missing](nothing.md), [up](../../outside.md), [web](https://example.com/x).',
          'Anchors: [ok](b.md#where-the-time-goes), [bad](b.md#nowhere), [here](#local), [ok](b.md#step-one-large).',
          'Bare: https://example.org and <https://example.net>; www.example.com too.',
          '',
          '## Local',
        ].join('\n'),
        'docs/b.md': target,
      });
      assert.deepEqual(checkMarkdown(r, 'docs/a.md'), [
        'docs/a.md:1: no such file in the repository: nothing.md',
        'docs/a.md:1: leaves the repository: ../../outside.md',
        'docs/a.md:1: links outside the repository: https://example.com/x',
        'docs/a.md:2: no heading #nowhere in docs/b.md',
        'docs/a.md:3: links outside the repository: https://example.org',
        'docs/a.md:3: links outside the repository: <https://example.net>',
        'docs/a.md:3: links outside the repository: www.example.com',
      ]);
    });

    it('ignore code blocks and code spans as links, but check the documents and files they name', () => {
      const r = memoryRepo({
        'README.md': [
          '```sh',
          'curl https://localhost:8443/mutate   # [x](nothing.md)',
          '```',
          'Run `curl https://localhost:8443` with `[x](y.md)` in it; `server/gone.ts` and `docs/b.md` are named.',
          'The ``double `tick` span`` and `generated/out.json` (ignored) and `dist/x.js` (built) are fine.',
        ].join('\n'),
        'docs/b.md': target,
        'server/a.ts': '',
      });
      assert.deepEqual(checkMarkdown(r, 'README.md'), [
        'README.md:4: names a document that is not in the repository: y.md',
        'README.md:4: names a file that is not in the repository: server/gone.ts',
      ]);
    });

    it('check the documents and sections comments name, in TypeScript, YAML and shell', () => {
      const r = memoryRepo({
        'README.md': '# Gateway\n\n## Routes\n',
        'docs/b.md': target,
        'server/a.ts': [
          '/** See docs/b.md, "Where the time goes" and README "Routes"; not PLAN.md or ../../elsewhere/notes. */',
          "const url = 'https://example.com/PLAN.md'; // docs/b.md, 'Nowhere' and server/gone.ts",
          'const re = /\\/\\/ docs\\/missing.md/; // README "Routing"',
          '// docs/b.md, "Where the',
          '// time goes" spans two lines; http.js names its source, server/a.js too',
        ].join('\n'),
        'server/http.ts': '',
        'manifests/x.yaml': "# (docs/missing.md)\nkey: 'value # docs/also-missing.md'\nother: a#b.md\n",
        'scripts/run.sh': '#!/bin/sh\n# see TOOLS.md\necho "# docs/missing.md"\n',
      });
      assert.deepEqual(checkComments(r, 'server/a.ts'), [
        'server/a.ts:1: names a document that is not in the repository: PLAN.md',
        'server/a.ts:1: names a path outside the repository: ../../elsewhere/notes',
        'server/a.ts:2: no section "Nowhere" in docs/b.md',
        'server/a.ts:2: names a file that is not in the repository: server/gone.ts',
        'server/a.ts:3: no section "Routing" in README.md',
      ]);
      assert.deepEqual(checkComments(r, 'manifests/x.yaml'), [
        'manifests/x.yaml:1: names a document that is not in the repository: docs/missing.md',
      ]);
      assert.deepEqual(checkComments(r, 'scripts/run.sh'), [
        'scripts/run.sh:2: names a document that is not in the repository: TOOLS.md',
      ]);
    });

    it('read the contents as the links before the first section, and the sections as the ## headings', () => {
      const markdown =
        '# T\n\n- [A](#a)\n  - [B `x`](#b-x)\n- [web](c.md#d)\n\n## A\n\n- [Not](#contents)\n\n### Sub\n\n## B `x`\n';
      assert.deepEqual([...contentsOf(markdown)], ['a', 'b-x']);
      assert.deepEqual(sectionsOf(markdown), ['a', 'b-x']);
    });

    it('make anchors as GitHub does', () => {
      assert.equal(
        slug('Rendering the webhook configurations: `admission-gateway manifests`'),
        'rendering-the-webhook-configurations-admission-gateway-manifests',
      );
      assert.equal(slug('Configuration (`gateway.yaml`)'), 'configuration-gatewayyaml');
      assert.equal(slug('Idle connections: `server.maxConnections` 512'), 'idle-connections-servermaxconnections-512');
      assert.equal(slug('`server.tls`'), 'servertls');
      assert.equal(slug('A *very* **bold** [link](x.md) and snake_case'), 'a-very-bold-link-and-snake_case');
      assert.equal(slug('Autoscaling on 70 % of the CPU request'), 'autoscaling-on-70--of-the-cpu-request');
      assert.deepEqual([...anchorsOf(target)], ['target', 'where-the-time-goes', 'step-one-large', 'step-one']);
      assert.deepEqual([...anchorsOf('## A\n## A\n```\n## A\n```\n<a name="x"></a>\n')], ['a', 'a-1', 'x']);
    });
  });
});
