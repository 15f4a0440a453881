/**
 * Who may read the ops port with `server.opsAuth: kube`, decided the way controller-runtime guards its metrics:
 * the bearer token is authenticated by the apiserver (TokenReview), then the caller is authorized on the
 * request's path (a SubjectAccessReview of a non-resource URL). Answers are kept for a while, so a scrape seldom
 * costs a call.
 *
 * Anyone on the pod network can send tokens, so every cost is bounded: the caches by entries and time, the calls
 * by how many run at once and how long each may take. What was granted is kept apart from what was refused, so a
 * flood of made-up tokens or forbidden paths pushes out only other refusals, never a scraper's grant. A question
 * the apiserver did not answer is never kept and never lets a request through.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';

/** Who a token belongs to, as the apiserver's TokenReview says. */
export interface TokenUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

export type TokenReview =
  { readonly authenticated: true; readonly user: TokenUser } | { readonly authenticated: false };

/** The apiserver's two answers. Each rejects when the apiserver did not answer (unreachable, an error, the signal). */
export interface AccessReviewer {
  reviewToken(token: string, signal: AbortSignal): Promise<TokenReview>;
  /** Whether `user` may `verb` the non-resource URL `path`. */
  reviewAccess(user: TokenUser, path: string, verb: string, signal: AbortSignal): Promise<boolean>;
}

export type OpsAccessDecision =
  | { readonly decision: 'allowed'; readonly user: string }
  | { readonly decision: 'unauthenticated' }
  | { readonly decision: 'forbidden'; readonly user: string }
  | { readonly decision: 'unavailable'; readonly error: string };

export interface OpsAccessLimits {
  /** How long a token the apiserver authenticated is taken as its user. */
  readonly tokenTtlMs: number;
  /** How long a token it did not authenticate is refused without asking again. */
  readonly rejectedTtlMs: number;
  /** How long an allowed (user, verb, path) stays allowed. */
  readonly allowedTtlMs: number;
  /** How long a denied one stays denied. */
  readonly deniedTtlMs: number;
  /** Entries of each of the four caches (tokens and decisions, granted and refused). */
  readonly maxEntries: number;
  /** Longest wait for one answer of the apiserver. */
  readonly callTimeoutMs: number;
  /** Questions to the apiserver at once; past it a request that needs one is answered 503. */
  readonly maxCallsInFlight: number;
}

/**
 * Tokens as long as the kubelet's and the apiserver's webhook token caches keep them, decisions as long as
 * controller-runtime keeps its authorizer's: at Prometheus' usual 30 s interval, three scrapes in four cost no call.
 */
export const OPS_ACCESS_LIMITS: OpsAccessLimits = {
  tokenTtlMs: 120_000,
  rejectedTtlMs: 30_000,
  allowedTtlMs: 300_000,
  deniedTtlMs: 30_000,
  maxEntries: 1024,
  callTimeoutMs: 5_000,
  maxCallsInFlight: 16,
};

export type AccessReviewKind = 'token' | 'access';
/** `cached`: no new call (a kept answer, or one already being asked); `asked`: the apiserver answered; `failed`: it did not. */
export type AccessLookupResult = 'cached' | 'asked' | 'failed';

export interface OpsAccessOptions {
  readonly reviewer: AccessReviewer;
  readonly limits?: Partial<OpsAccessLimits>;
  /** The caches' clock in milliseconds (tests move it). Default: performance.now. */
  readonly now?: () => number;
}

export interface OpsAccess {
  check(token: string, path: string, verb: string): Promise<OpsAccessDecision>;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Calls to the apiserver: at most `max` at once, none longer than `timeoutMs`. */
class CallBudget {
  private inFlight = 0;

  constructor(
    private readonly max: number,
    private readonly timeoutMs: number,
  ) {}

  async run<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.inFlight >= this.max) throw new Error(`${this.max} questions to the apiserver are already waiting`);
    this.inFlight++;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // Settled at the deadline even if the call ignored its signal: the slot is freed either way.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new Error(`no answer within ${this.timeoutMs} ms`);
        controller.abort(err);
        reject(err);
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([call(controller.signal), deadline]);
    } finally {
      clearTimeout(timer);
      this.inFlight--;
    }
  }
}

interface AnswerCacheOptions<V> {
  readonly kind: AccessReviewKind;
  readonly isGranted: (answer: V) => boolean;
  readonly ttl: { readonly granted: number; readonly refused: number };
  readonly max: number;
  readonly perf: { now(): number };
  readonly onLookup: ((kind: AccessReviewKind, result: AccessLookupResult) => void) | undefined;
}

/**
 * Answers by key, granted ones and refused ones in caches of their own, each bounded by entries and with its own
 * lifetime; concurrent questions with one key share one call.
 */
class AnswerCache<V extends object> {
  private readonly granted: LRUCache<string, V>;
  private readonly refused: LRUCache<string, V>;
  private readonly asking = new Map<string, Promise<V>>();
  private readonly kind: AccessReviewKind;
  private readonly isGranted: (answer: V) => boolean;
  private readonly onLookup: AnswerCacheOptions<V>['onLookup'];

  constructor({ kind, isGranted, ttl, max, perf, onLookup }: AnswerCacheOptions<V>) {
    this.kind = kind;
    this.isGranted = isGranted;
    this.onLookup = onLookup;
    // ttlResolution 0: an answer is stale the moment its time is up, not up to a millisecond later.
    this.granted = new LRUCache<string, V>({ max, ttl: ttl.granted, perf, ttlResolution: 0 });
    this.refused = new LRUCache<string, V>({ max, ttl: ttl.refused, perf, ttlResolution: 0 });
  }

  async get(key: string, ask: () => Promise<V>): Promise<V> {
    const kept = this.granted.get(key) ?? this.refused.get(key) ?? this.asking.get(key);
    if (kept) {
      this.onLookup?.(this.kind, 'cached');
      return kept;
    }
    const asked = ask().then(
      (answer) => {
        (this.isGranted(answer) ? this.granted : this.refused).set(key, answer);
        this.onLookup?.(this.kind, 'asked');
        return answer;
      },
      (err: unknown) => {
        this.onLookup?.(this.kind, 'failed');
        throw err;
      },
    );
    this.asking.set(key, asked);
    try {
      return await asked;
    } finally {
      this.asking.delete(key);
    }
  }
}

/** A stable key for one question about one user; the parts are the apiserver's and the request's, hashed. */
function accessKey(user: TokenUser, verb: string, path: string): string {
  const extra = Object.entries(user.extra ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256(JSON.stringify([user.username, user.uid ?? '', user.groups ?? [], extra, verb, path]));
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export function createOpsAccess(
  options: OpsAccessOptions,
  onLookup?: (kind: AccessReviewKind, result: AccessLookupResult) => void,
): OpsAccess {
  const limits = { ...OPS_ACCESS_LIMITS, ...options.limits };
  const perf = { now: options.now ?? (() => performance.now()) };
  const budget = new CallBudget(limits.maxCallsInFlight, limits.callTimeoutMs);
  const { reviewer } = options;
  const shared = { max: limits.maxEntries, perf, onLookup };
  const tokens = new AnswerCache<TokenReview>({
    ...shared,
    kind: 'token',
    isGranted: (review) => review.authenticated,
    ttl: { granted: limits.tokenTtlMs, refused: limits.rejectedTtlMs },
  });
  const decisions = new AnswerCache<{ readonly allowed: boolean }>({
    ...shared,
    kind: 'access',
    isGranted: (answer) => answer.allowed,
    ttl: { granted: limits.allowedTtlMs, refused: limits.deniedTtlMs },
  });

  return {
    async check(token, path, verb) {
      let review: TokenReview;
      try {
        // Only a hash of the token is kept: the cache holds no credential.
        review = await tokens.get(sha256(token), () => budget.run((signal) => reviewer.reviewToken(token, signal)));
      } catch (err) {
        return { decision: 'unavailable', error: `TokenReview: ${errorText(err)}` };
      }
      if (!review.authenticated) return { decision: 'unauthenticated' };
      const { user } = review;
      let allowed: boolean;
      try {
        ({ allowed } = await decisions.get(accessKey(user, verb, path), () =>
          budget.run(async (signal) => ({ allowed: await reviewer.reviewAccess(user, path, verb, signal) })),
        ));
      } catch (err) {
        return { decision: 'unavailable', error: `SubjectAccessReview: ${errorText(err)}` };
      }
      return allowed ? { decision: 'allowed', user: user.username } : { decision: 'forbidden', user: user.username };
    },
  };
}
