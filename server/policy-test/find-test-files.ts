/**
 * The test files `admission-gateway test [PATH…]` runs: each file named, and in each folder named (the
 * current one when none is) every `*.test.yaml` below it, in name order, folders whose name starts with a dot
 * and node_modules left out. Bounded: at most MAX_TEST_FILES files, at most MAX_FOLDER_DEPTH folders deep.
 */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../base/errors.js';

export const TEST_FILE_SUFFIX = '.test.yaml';
export const MAX_TEST_FILES = 10_000;
const MAX_FOLDER_DEPTH = 32;

/** A path that names no test file: the message says why. */
export class TestPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TestPathError';
  }
}

/** How a file is named in reports: relative to `cwd` when it is below it, else whole. */
export function displayName(absolute: string, cwd: string): string {
  const relative = path.relative(cwd, absolute);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : absolute;
}

async function walk(dir: string, depth: number, found: string[]): Promise<void> {
  if (depth > MAX_FOLDER_DEPTH) throw new TestPathError(`${dir}: folders nest more than ${MAX_FOLDER_DEPTH} deep`);
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw new TestPathError(`cannot read the folder ${dir}: ${errorMessage(err)}`);
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!entry.name.startsWith('.') && entry.name !== 'node_modules') await walk(full, depth + 1, found);
    } else if (entry.isFile() && entry.name.endsWith(TEST_FILE_SUFFIX)) {
      found.push(full);
      if (found.length > MAX_TEST_FILES) throw new TestPathError(`more than ${MAX_TEST_FILES} test files`);
    }
  }
}

/** The test files of `paths` (relative to `cwd`), as reports name them. */
export async function findTestFiles(paths: readonly string[], cwd: string): Promise<string[]> {
  const found: string[] = [];
  for (const given of paths.length > 0 ? paths : ['.']) {
    const absolute = path.resolve(cwd, given);
    let isDirectory: boolean;
    try {
      isDirectory = (await stat(absolute)).isDirectory();
    } catch (err) {
      throw new TestPathError(`cannot read "${given}": ${errorMessage(err)}`);
    }
    if (!isDirectory) found.push(absolute);
    else {
      const before = found.length;
      await walk(absolute, 0, found);
      if (found.length === before) throw new TestPathError(`no *${TEST_FILE_SUFFIX} file in "${given}"`);
    }
  }
  return [...new Set(found)].map((file) => displayName(file, cwd));
}
