/**
 * The webhook HTTPS app: Koa, with @koa/router routes for POST /mutate, /validate and their /fail, /ignore
 * splits (review-middleware.ts), 405 with `Allow` for another method on them, 404 naming the routes for
 * anything else. The review's services reach its middleware through `app.context`.
 */
import Router, { type RouterContext } from '@koa/router';
import Koa from 'koa';
import compose from 'koa-compose';
import { errorMessage } from '../base/errors.js';
import { closeWhileDraining } from './drain.js';
import {
  answerInProtocol,
  holdReview,
  readReview,
  runReview,
  writeAnswersTogether,
  type ReviewServices,
  type ReviewState,
} from './review-middleware.js';
import { ROUTES } from './routes.js';
import { runAuthorize } from './authorize-middleware.js';
import type { Authorizer } from '../dispatch/authorizer.js';

export interface WebhookAppDeps extends ReviewServices {
  /** The authorize chain: with it, POST /authorize answers SubjectAccessReviews. */
  readonly authorizer?: Authorizer;
  /** True once the gateway is shutting down (drain.ts). */
  readonly draining?: () => boolean;
}

const PATHS = [...ROUTES.map((route) => `/${route}`), '/authorize'];

export function createWebhookApp(deps: WebhookAppDeps): Koa<ReviewState, ReviewServices> {
  const { draining, authorizer: _authorizer, ...services } = deps;
  const app = new Koa<ReviewState, ReviewServices>();
  Object.assign(app.context, services);
  // An error no middleware answered (a broken socket while writing, mostly): logged, never thrown.
  app.on('error', (err: unknown) => deps.log.warn({ err: errorMessage(err) }, 'webhook request failed'));

  const router = new Router<ReviewState, ReviewServices>();
  for (const route of ROUTES) {
    // Composed once here: the router composes a route's middleware again on every request it matches.
    router.post(
      `/${route}`,
      compose([writeAnswersTogether, holdReview, answerInProtocol, readReview, runReview(route)]),
    );
  }

  if (deps.authorizer) router.post('/authorize', compose([holdReview, runAuthorize(deps.authorizer)]));

  if (draining) app.use(closeWhileDraining(draining));
  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use((ctx: RouterContext<ReviewState, ReviewServices>) => {
    // A path with a route but not this method: allowedMethods, on the way back, makes this a 405 with Allow.
    ctx.status = 404;
    ctx.body = ctx.matched?.length
      ? { error: `${ctx.method} ${ctx.path}: expected POST with an AdmissionReview` }
      : { error: `no webhook at ${ctx.path}; routes: ${PATHS.join(', ')}` };
  });
  return app;
}
