import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MAX_CONFIG_FILE_BYTES } from '../../../server/base/limits.js';
import { readPolicyDocuments } from '../../../server/native-policy/policy-files.js';

describe('readPolicyDocuments(): the documents of an admissionPolicies entry’s files', function () {
  let dir: string;

  beforeEach(async function () {
    dir = await mkdtemp(path.join(os.tmpdir(), 'policy-files-'));
  });

  afterEach(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  /** The documents' files and values, or the error's message, for the entry's `files`. */
  function read(files: string[]): string {
    try {
      return readPolicyDocuments(files, 'chain[0].files', 'gateway.yaml')
        .map((d) => `${path.relative(dir, d.file)} ${JSON.stringify(d.value)}`)
        .join('\n');
    } catch (err) {
      return (err as Error).message.replaceAll(`${dir}/`, '');
    }
  }

  it('reads a folder’s YAML and JSON files in name order, not its subfolders nor other files', async function () {
    await writeFile(path.join(dir, 'b.yaml'), 'kind: B\n---\nkind: B2\n---\n');
    await writeFile(path.join(dir, 'a.json'), '{"kind": "A"}');
    await writeFile(path.join(dir, 'notes.txt'), 'kind: Notes\n');
    await mkdir(path.join(dir, 'sub'));
    await writeFile(path.join(dir, 'sub', 'c.yaml'), 'kind: C\n');
    assert.equal(read([dir]), 'a.json {"kind":"A"}\nb.yaml {"kind":"B"}\nb.yaml {"kind":"B2"}');
  });

  it('refuses a file that is not a regular file, without waiting on it', function () {
    const fifo = path.join(dir, 'pipe.yaml');
    execFileSync('mkfifo', [fifo]);
    assert.equal(read([fifo]), 'gateway.yaml: chain[0].files: cannot read pipe.yaml: not a regular file (a FIFO)');
  });

  it('refuses a file larger than a configuration file may be', async function () {
    const big = path.join(dir, 'big.yaml');
    await writeFile(big, `# ${'x'.repeat(MAX_CONFIG_FILE_BYTES)}\n`);
    assert.equal(
      read([big]),
      `gateway.yaml: chain[0].files: cannot read big.yaml: larger than ${MAX_CONFIG_FILE_BYTES} bytes (${MAX_CONFIG_FILE_BYTES + 3})`,
    );
  });
});
