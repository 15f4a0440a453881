/**
 * One connection of a provider's undici Pool (the Pool's `factory` makes these): an undici Client that
 * knows whether its current socket has carried a request before, and tells each request which connection
 * took it. That is what the retry rule (provider-exchange.ts) needs and undici does not expose: whether a
 * request that failed was written on a reused keep-alive socket, and a way to send it again on a fresh one.
 *
 * A Client holds one socket at a time and, with `pipelining: 1`, writes its next request only after the
 * previous answer is complete. Its 'connect' event fires when a new socket is ready, before anything is
 * written on it; so counting the writes since the last 'connect' says whether a socket is reused. A
 * custom `connect` that tags sockets would know the socket but not which request is written on it.
 */
import { Client, type Dispatcher } from 'undici';

/** What a request's handler learns from the connection that takes it. */
export interface ConnectionAware {
  /** Called each time a connection takes the request (again, when it is retried). */
  assigned(connection: ProviderConnection): void;
}

/** Dispatch options carrying the request's handler, so that the connection can introduce itself. */
export interface ProviderDispatchOptions extends Dispatcher.DispatchOptions {
  readonly exchange: ConnectionAware;
}

export class ProviderConnection extends Client {
  private writes = 0;

  constructor(origin: URL, options: Client.Options) {
    super(origin, options);
    this.on('connect', () => {
      this.writes = 0;
    });
  }

  /** A request is being written on the current socket: true when that socket carried one before. */
  countWrite(): boolean {
    return this.writes++ > 0;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    (options as Partial<ProviderDispatchOptions>).exchange?.assigned(this);
    return super.dispatch(options, handler);
  }
}
