/**
 * Steady admission load the way kube-apiserver sends it: a few keep-alive HTTPS connections, each posting
 * the next AdmissionReview as soon as the previous answer arrived. Every request is recorded with what
 * happened to it (see keepalive-client.ts), so a test can account for each one.
 */
import { randomUUID } from 'node:crypto';
import { KeepAliveConnection, type ConnectOptions, type Outcome } from './keepalive-client.js';
import { conditions } from './wait.js';

export interface LoadRecord {
  readonly connection: number;
  readonly uid: string;
  readonly outcome: Outcome;
}

export interface LoadOptions extends ConnectOptions {
  /** Webhook path, e.g. `/mutate`. */
  readonly path: string;
  /** Concurrent keep-alive connections. */
  readonly connections: number;
  /** The AdmissionReview JSON to send with this uid. */
  readonly review: (uid: string) => string;
}

export interface Load {
  readonly records: readonly LoadRecord[];
  /** TLS connections opened so far (reconnects included). */
  readonly opened: number;
  /** Resolves once `check()` holds, re-checked after every request; rejects after `timeoutMs` naming `what`. */
  until(what: string, check: () => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves once every connection's loop has ended: stopped, or refused a new connection. */
  readonly finished: Promise<void>;
  /** Asks the loops to stop after their current request, then waits for them. */
  stop(): Promise<void>;
}

export function startLoad(options: LoadOptions): Load {
  const records: LoadRecord[] = [];
  const waits = conditions(20_000);
  let stopped = false;
  let opened = 0;
  const notify = waits.notify;

  // One loop per connection: reuse it until the server says `Connection: close` or closes it, then open
  // another; a refused connection ends the loop (the Service would send the apiserver elsewhere).
  const loop = async (connection: number) => {
    let conn: KeepAliveConnection | undefined;
    while (!stopped) {
      if (!conn || conn.closed) {
        const next = await KeepAliveConnection.connect(options);
        if (!(next instanceof KeepAliveConnection)) {
          records.push({ connection, uid: '', outcome: next });
          notify();
          return;
        }
        opened++;
        conn = next;
      }
      const uid = randomUUID();
      const outcome = await conn.request('POST', options.path, options.review(uid));
      records.push({ connection, uid, outcome });
      if (outcome.kind === 'answered' && outcome.headers.connection?.toLowerCase() === 'close') conn.close();
      notify();
    }
    conn?.close();
  };
  const finished = Promise.all(Array.from({ length: options.connections }, (_, i) => loop(i + 1))).then(() => {
    notify();
  });

  return {
    records,
    get opened() {
      return opened;
    },
    until: waits.until,
    finished,
    stop() {
      stopped = true;
      return finished;
    },
  };
}
