/** Per-call options that make client-node's request abort with `signal` (its public middleware hook). */
import {
  Observable,
  type ConfigurationOptions,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';

export function abortedBy(signal: AbortSignal): ConfigurationOptions {
  return {
    middleware: [
      {
        pre(context: RequestContext) {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
