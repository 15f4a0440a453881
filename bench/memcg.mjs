// A memory cgroup for one bench child, so that it runs under the limit a pod would have (the Deployment's
// `resources.limits.memory`) and the kernel, not the bench, decides whether it fits: over the limit the
// child is reclaimed and then OOM-killed, exactly as in a cluster. Used by the `large` scenario (large.mjs).
//
// cgroup v1 (memory controller mounted at /sys/fs/cgroup/memory) first, then cgroup v2 (a mount whose root
// offers the memory controller to its children), else none: the caller then measures peak RSS only.
// Every cgroup created here is removed by removeCgroupsSync(), which run.mjs calls on every exit path.
/* global process, console */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const PREFIX = 'admission-gateway-bench-';
const V1_ROOT = '/sys/fs/cgroup/memory';
const V2_ROOTS = ['/sys/fs/cgroup/unified', '/sys/fs/cgroup'];

/** Directories created by this process and not yet removed. */
const created = new Set();

const read = (file) => fs.readFileSync(file, 'utf8').trim();
const readNumber = (file) => {
  try {
    return Number(read(file));
  } catch {
    return null;
  }
};
/** `key value` lines (memory.oom_control, memory.events) → the value of `key`, or null. */
const field = (file, key) => {
  try {
    const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(read(file));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
};

/** A Kubernetes memory quantity (192Mi, 1Gi, 200M, 201326592) in bytes, or null. */
export function parseMemoryQuantity(text) {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(String(text ?? '').trim());
  if (!m) return null;
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Math.round(Number(m[1]) * (m[2] ? unit[m[2]] : 1));
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/**
 * Cgroups left by a bench that was killed before its exit handler ran (SIGKILL): named after the bench's pid,
 * removed when that pid is gone. rmdir only succeeds on an empty cgroup, so nothing still running is touched.
 */
function removeStale(root) {
  let names;
  try {
    names = fs.readdirSync(root).filter((n) => n.startsWith(PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(name.slice(PREFIX.length).split('-')[0]);
    if (!Number.isInteger(pid) || pid === process.pid || pidAlive(pid)) continue;
    try {
      fs.rmdirSync(path.join(root, name));
    } catch {
      // not empty, or already gone
    }
  }
}

function tryCreate(root, name, setup) {
  removeStale(root);
  const dir = path.join(root, `${PREFIX}${process.pid}-${name}`);
  try {
    fs.mkdirSync(dir);
  } catch (err) {
    return { why: `mkdir ${dir}: ${err.code ?? err.message}` };
  }
  created.add(dir);
  try {
    setup(dir);
    return { dir };
  } catch (err) {
    removeDirSync(dir);
    return { why: `${dir}: ${err.message}` };
  }
}

function v1(name, limitBytes) {
  if (!fs.existsSync(path.join(V1_ROOT, 'memory.limit_in_bytes')))
    return { why: `no cgroup v1 memory controller at ${V1_ROOT}` };
  const made = tryCreate(V1_ROOT, name, (dir) => {
    fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    // No swap beyond the limit either (when swap accounting is on), as on a Kubernetes node.
    if (fs.existsSync(path.join(dir, 'memory.memsw.limit_in_bytes')))
      fs.writeFileSync(path.join(dir, 'memory.memsw.limit_in_bytes'), String(limitBytes));
  });
  if (!made.dir) return made;
  const { dir } = made;
  return {
    kind: 'cgroup v1',
    dir,
    procsFile: path.join(dir, 'cgroup.procs'),
    /** Peak usage counts page cache charged to the cgroup (the child's log file) as well as its RSS, as the kernel does. */
    stats: () => ({
      usageBytes: readNumber(path.join(dir, 'memory.usage_in_bytes')),
      peakBytes: readNumber(path.join(dir, 'memory.max_usage_in_bytes')),
      failcnt: readNumber(path.join(dir, 'memory.failcnt')),
      oomKills: field(path.join(dir, 'memory.oom_control'), 'oom_kill'),
    }),
  };
}

function v2(name, limitBytes) {
  const root = V2_ROOTS.find((r) => {
    try {
      return read(path.join(r, 'cgroup.subtree_control')).split(' ').includes('memory');
    } catch {
      return false;
    }
  });
  if (!root) return { why: 'no cgroup v2 mount offering the memory controller to its children' };
  const made = tryCreate(root, name, (dir) => {
    fs.writeFileSync(path.join(dir, 'memory.max'), String(limitBytes));
    if (fs.existsSync(path.join(dir, 'memory.swap.max'))) fs.writeFileSync(path.join(dir, 'memory.swap.max'), '0');
  });
  if (!made.dir) return made;
  const { dir } = made;
  return {
    kind: 'cgroup v2',
    dir,
    procsFile: path.join(dir, 'cgroup.procs'),
    // memory.peak exists from Linux 5.19; without it the caller's samples of memory.current are the peak.
    stats: () => ({
      usageBytes: readNumber(path.join(dir, 'memory.current')),
      peakBytes: readNumber(path.join(dir, 'memory.peak')),
      failcnt: field(path.join(dir, 'memory.events'), 'max'),
      oomKills: field(path.join(dir, 'memory.events'), 'oom_kill'),
    }),
  };
}

/**
 * A memory cgroup limited to `limitBytes`: { kind, dir, procsFile, stats(), remove() }, or { kind: null, why }
 * when neither cgroup version is writable here. The child must be put into procsFile before it allocates
 * (run.mjs starts it through `sh -c 'echo $$ > procsFile && exec …'`).
 */
export function createMemoryCgroup(name, limitBytes) {
  const first = v1(name, limitBytes);
  if (first.dir) return withRemove(first);
  const second = v2(name, limitBytes);
  if (second.dir) return withRemove(second);
  return { kind: null, why: `${first.why}; ${second.why}` };
}

function withRemove(cgroup) {
  return {
    ...cgroup,
    /** Removes the cgroup once its last process has exited (rmdir fails with EBUSY until then). */
    async remove() {
      for (let i = 0; i < 50 && created.has(cgroup.dir); i++) {
        removeDirSync(cgroup.dir);
        if (created.has(cgroup.dir)) await sleep(100);
      }
    },
  };
}

function removeDirSync(dir) {
  try {
    fs.rmdirSync(dir);
    created.delete(dir);
  } catch (err) {
    if (err.code === 'ENOENT') created.delete(dir);
  }
}

/**
 * For the exit handler (synchronous): the children have just been sent SIGKILL, and a cgroup cannot be removed
 * until its processes are gone, so this retries for up to 2 s, sleeping in between.
 */
export function removeCgroupsSync() {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 40 && created.size > 0; i++) {
    for (const dir of [...created]) removeDirSync(dir);
    if (created.size > 0) Atomics.wait(cell, 0, 0, 50);
  }
  for (const dir of created)
    console.error(`bench: could not remove cgroup ${dir} (rmdir it once its processes are gone)`);
}
