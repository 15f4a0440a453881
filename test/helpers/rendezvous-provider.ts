/**
 * Remote mutating providers that answer together: an HTTPS server on 127.0.0.1 whose path `/label/<name>`
 * adds the label `<name>: "yes"`. Each review is held until `together` reviews are waiting, then all of them
 * are answered — or, when they never all arrive (the gateway calls them one after another), each is answered
 * alone after `aloneAfterMs`, so the chain still ends. The order of arrivals and answers is what a test
 * reads: calls that overlap all arrive before the first answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { caBundle, generateCertificates } from '../../certs/generate.js';

export interface RendezvousProvider {
  /** https://127.0.0.1:<port>/label/<name> */
  url(name: string): string;
  readonly caBundle: string;
  /** `arrive:<name>` and `answer:<name>`, in the order they happened. */
  readonly events: readonly string[];
  /** The `request.object` each call was sent, by label name. */
  readonly objects: ReadonlyMap<string, unknown>;
  close(): Promise<void>;
}

interface Held {
  readonly name: string;
  readonly uid: string;
  readonly res: ServerResponse;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startRendezvousProvider(options: {
  readonly together: number;
  readonly aloneAfterMs: number;
}): Promise<RendezvousProvider> {
  const certs = generateCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const events: string[] = [];
  const objects = new Map<string, unknown>();
  let waiting: Held[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const answer = ({ name, uid, res }: Held) => {
    events.push(`answer:${name}`);
    if (res.destroyed) return;
    const patch = [{ op: 'add', path: `/metadata/labels/${name}`, value: 'yes' }];
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid,
        allowed: true,
        patchType: 'JSONPatch',
        patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
      },
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  const server = https.createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
    void readBody(req).then((text) => {
      const name = (req.url ?? '').split('?')[0]!.split('/').pop() ?? '';
      const review = JSON.parse(text) as { request: { uid: string; object?: { metadata?: { labels?: object } } } };
      events.push(`arrive:${name}`);
      objects.set(name, review.request.object);
      const held: Held = { name, uid: review.request.uid, res };
      waiting.push(held);
      if (waiting.length >= options.together) {
        const all = waiting;
        waiting = [];
        all.forEach(answer);
        return;
      }
      // Liveness only: reviews that never meet are answered alone, so a serial chain still finishes.
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!waiting.includes(held)) return;
        waiting = waiting.filter((h) => h !== held);
        answer(held);
      }, options.aloneAfterMs);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (name) => `https://127.0.0.1:${port}/label/${name}`,
    caBundle: caBundle(certs.caCert),
    events,
    objects,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
