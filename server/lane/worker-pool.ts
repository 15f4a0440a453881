/**
 * The worker threads of the large-review lane: at most `workers`, started when a job first needs one (an idle
 * gateway holds none), each running one job at a time, with at most `queue` jobs waiting for one. A job that
 * finds the pool full is refused at once (the lane answers 429). A worker that dies takes its job with it (the
 * job is told) and is replaced when work waits; a worker that cannot start breaks the pool: its jobs are told,
 * and the lane stops taking reviews.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { FromWorker, JobMessage, LaneWorkerData, ReviewJob, ToWorker } from './lane-messages.js';

/** What a job's owner hears. */
export interface JobListener {
  /** A message of the job: `refused`, `failed` or `answer` is the last one but for shadow entries. */
  message(message: JobMessage): void;
  /** The job will never finish: its worker died or could not start. */
  lost(err: Error): void;
}

/** A job handed to the pool. */
export interface JobHandle {
  /** Tells the job's worker (proceed or drop). */
  send(message: ToWorker): void;
}

export interface WorkerPoolOptions {
  readonly workers: number;
  readonly queue: number;
  readonly workerData: LaneWorkerData;
  /** Each worker's heap limits (its young generation); V8's own sizing when undefined. */
  readonly resourceLimits?: ResourceLimits;
  /** A message that is no job's: the worker's log lines, metric updates, questions (answer them with `reply`). */
  readonly message: (message: FromWorker, reply: (message: ToWorker, transfer?: ArrayBuffer[]) => void) => void;
  /** No worker can start: the pool refuses every job from now on. */
  readonly broken: (err: Error) => void;
  /** What a worker is told once it is ready, before its first job. */
  readonly greeting?: () => readonly ToWorker[];
}

interface PoolWorker {
  readonly thread: Worker;
  ready: boolean;
  /** The job it runs (it runs one at a time). */
  job: number | undefined;
  /** Stops the worker when its job runs past its limit. */
  timer?: NodeJS.Timeout | undefined;
  /** Why the pool stopped it. */
  stopped?: string;
}

/** The ESM entry of tsx's API, from its package's exports (a worker imports it by URL, not by name). */
function tsxApi(from: string): string {
  const packageFile = createRequire(from).resolve('tsx/package.json');
  const { exports } = JSON.parse(readFileSync(packageFile, 'utf8')) as {
    exports: Record<string, { import?: { default?: string } } | string>;
  };
  const api = exports['./esm/api'];
  const entry = typeof api === 'object' ? api.import?.default : undefined;
  if (!entry) throw new Error('tsx has no ./esm/api export to load TypeScript in a worker with');
  return new URL(entry, pathToFileURL(packageFile)).href;
}

/** The worker module next to this one, as the running sources name it (tsx in a checkout, .js built). */
function startWorker(workerData: LaneWorkerData, resourceLimits: ResourceLimits | undefined): Worker {
  const self = import.meta.url;
  if (!self.endsWith('.ts')) return new Worker(new URL('./lane-worker.js', self), { workerData, resourceLimits });
  // Under tsx (the tests, `npm run dev`) a worker does not inherit the TypeScript loader: it registers it first.
  const entry = new URL('./lane-worker.ts', self).href;
  const boot = `import(${JSON.stringify(tsxApi(self))}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData, resourceLimits });
}

export class WorkerPool {
  private readonly workers: PoolWorker[] = [];
  private readonly waiting: Array<{ job: ReviewJob; limitMs: number }> = [];
  private readonly listeners = new Map<number, JobListener>();
  private isBroken = false;
  private closed = false;

  constructor(private readonly options: WorkerPoolOptions) {
    // V8 sizes a heap's young generation once, when its isolate is made, and a --max-semi-space-size flag wins over
    // the size a worker is given. The Deployment sets that flag for the event loop, whose heap exists already;
    // cleared once here, it caps none of the workers started later (docs/decisions.md, "Large reviews in worker
    // threads").
    if (options.resourceLimits?.maxYoungGenerationSizeMb !== undefined) setFlagsFromString('--max-semi-space-size=0');
  }

  get broken(): boolean {
    return this.isBroken;
  }

  /** Jobs running and waiting. */
  get jobs(): number {
    return this.workers.filter((w) => w.job !== undefined).length + this.waiting.length;
  }

  /**
   * Hands `job` to a worker, or queues it; undefined when the pool is full (or broken, or closed). A job still
   * running `limitMs` after it started stops its worker (a step that computes without end would hold it for
   * good): the job is lost, and the next job gets a new worker.
   */
  submit(job: ReviewJob, listener: JobListener, limitMs: number): JobHandle | undefined {
    const { workers, queue } = this.options;
    if (this.isBroken || this.closed || this.jobs >= workers + queue) return undefined;
    this.listeners.set(job.id, listener);
    const idle = this.workers.find((w) => w.ready && w.job === undefined);
    if (idle) this.dispatch(idle, job, limitMs);
    else {
      this.waiting.push({ job, limitMs });
      const starting = this.workers.filter((w) => !w.ready).length;
      if (this.workers.length < workers && starting < this.waiting.length) this.spawn();
    }
    return {
      send: (message) => {
        const worker = this.workers.find((w) => w.job === job.id);
        worker?.thread.postMessage(message);
        if (worker && message.type === 'drop') this.free(worker);
      },
    };
  }

  /** Tells every ready worker (one starting is told by `greeting`, before its first job). */
  broadcast(message: ToWorker): void {
    for (const worker of this.workers) if (worker.ready) worker.thread.postMessage(message);
  }

  /** Forgets a job whose owner expects nothing more (shadow entries that come later are dropped). */
  forget(id: number): void {
    this.listeners.delete(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers.splice(0);
    await Promise.all(workers.map((w) => w.thread.terminate()));
  }

  private dispatch(worker: PoolWorker, job: ReviewJob, limitMs: number): void {
    worker.job = job.id;
    // Its body moves to the worker: the main thread holds none of it from now on.
    worker.thread.postMessage(job, [job.body.buffer as ArrayBuffer]);
    worker.timer = setTimeout(() => {
      worker.stopped = `the review ran more than ${limitMs} ms, past its deadline: its worker was stopped`;
      void worker.thread.terminate();
    }, limitMs);
    worker.timer.unref();
  }

  private free(worker: PoolWorker): void {
    clearTimeout(worker.timer);
    worker.job = undefined;
    this.next(worker);
  }

  private next(worker: PoolWorker): void {
    const next = this.waiting.shift();
    if (next) this.dispatch(worker, next.job, next.limitMs);
  }

  private spawn(): void {
    const worker: PoolWorker = {
      thread: startWorker(this.options.workerData, this.options.resourceLimits),
      ready: false,
      job: undefined,
    };
    this.workers.push(worker);
    const reply = (message: ToWorker, transfer?: ArrayBuffer[]) => worker.thread.postMessage(message, transfer);
    worker.thread.on('message', (message: FromWorker) => {
      switch (message.type) {
        case 'ready':
          worker.ready = true;
          for (const greeting of this.options.greeting?.() ?? []) reply(greeting);
          return this.next(worker);
        case 'broken':
          return this.break(new Error(`a large-review worker could not start: ${message.message}`));
        case 'decoded':
        case 'shadow':
          return this.listeners.get(message.id)?.message(message);
        case 'refused':
        case 'answer':
        case 'failed':
          // The job is over: the worker's next one starts once this one's last microtasks have run.
          if (worker.job === message.id) this.free(worker);
          return this.listeners.get(message.id)?.message(message);
        default:
          return this.options.message(message, reply);
      }
    });
    worker.thread.on('error', (err) => this.lose(worker, err));
    worker.thread.on('exit', (code) => this.lose(worker, new Error(`a large-review worker exited (code ${code})`)));
  }

  /** A worker is gone: its job is lost, and a replacement starts if jobs wait. */
  private lose(worker: PoolWorker, err: Error): void {
    const at = this.workers.indexOf(worker);
    if (at < 0) return;
    this.workers.splice(at, 1);
    clearTimeout(worker.timer);
    if (worker.job !== undefined) {
      const listener = this.listeners.get(worker.job);
      this.listeners.delete(worker.job);
      listener?.lost(worker.stopped ? new Error(worker.stopped) : err);
    }
    if (!worker.ready && !this.closed) return this.break(err);
    if (this.waiting.length > 0 && !this.closed) this.spawn();
  }

  private break(err: Error): void {
    if (this.isBroken) return;
    this.isBroken = true;
    for (const { job } of this.waiting.splice(0)) {
      const listener = this.listeners.get(job.id);
      this.listeners.delete(job.id);
      listener?.lost(err);
    }
    this.options.broken(err);
    void this.close();
  }
}
