/**
 * The remote providers of the config under test, answered without a network: each provider entry's calls go
 * through an undici MockAgent of its own (the provider transport's dispatcher seam), which refuses to connect
 * anywhere and answers every AdmissionReview with the response the test file gives the case in play, its uid
 * and apiVersion echoed; a discovery GET gets the file's discovery document. So an answer reaches the step
 * through the gateway's own provider client (its checks of the answer, its patch decoding, its breaker), as a
 * real provider's would. A call the file has no answer for is noted against the case, which then fails, and is
 * answered `allowed: true` so that the review goes on (and no failure trips the provider's breaker for the
 * cases after it).
 */
import { MockAgent, type Dispatcher } from 'undici';
import type { ProviderEntry } from '../config/types.js';
import type { CaseInPlay } from './case-in-play.js';
import type { TestSuite } from './suite.js';

export interface ProviderDoubles {
  /** The dispatcher `entry`'s calls go through. */
  dispatcherFor(entry: ProviderEntry): Dispatcher;
  close(): Promise<void>;
}

const JSON_HEADERS = { headers: { 'content-type': 'application/json' } };

/** What the gateway sent: the review's apiVersion and uid, to echo. */
function sentReview(body: unknown): { apiVersion: unknown; uid: unknown } {
  try {
    const review = JSON.parse(typeof body === 'string' ? body : '') as {
      apiVersion?: unknown;
      request?: { uid?: unknown };
    };
    return { apiVersion: review.apiVersion, uid: review.request?.uid };
  } catch {
    return { apiVersion: undefined, uid: undefined };
  }
}

export function createProviderDoubles(suite: TestSuite, play: CaseInPlay): ProviderDoubles {
  const agents: MockAgent[] = [];
  return {
    dispatcherFor(entry) {
      const agent = new MockAgent();
      agent.disableNetConnect();
      agents.push(agent);
      const anyOrigin = agent.get(() => true);
      anyOrigin
        .intercept({ path: () => true, method: 'POST' })
        .reply(({ body }) => {
          const { apiVersion, uid } = sentReview(body);
          const response = play.answer(entry.name) ?? { allowed: true };
          return {
            statusCode: 200,
            data: JSON.stringify({ apiVersion, kind: 'AdmissionReview', response: { ...response, uid } }),
            responseOptions: JSON_HEADERS,
          };
        })
        .persist();
      const discovery = suite.providers.get(entry.name)?.discovery;
      anyOrigin
        .intercept({ path: () => true, method: 'GET' })
        .reply(() =>
          discovery === undefined
            ? { statusCode: 404, data: 'no discovery document in the test file' }
            : { statusCode: 200, data: JSON.stringify(discovery), responseOptions: JSON_HEADERS },
        )
        .persist();
      return agent;
    },
    async close() {
      await Promise.all(agents.map((agent) => agent.close()));
    },
  };
}
