/** What a server reports of its connections (`listen()`'s `onConnection`), e.g. for a log. */
export interface ConnectionEvent {
  /** `accepted`: a client connected; `opened`: it logged in and opened a vhost; `closed`: it is gone. */
  readonly type: 'accepted' | 'opened' | 'closed';
  /** The client's address and port, `address:port`. */
  readonly peer: string;
  /** Whether it came over TLS. */
  readonly tls: boolean;
  /** The user, once logged in. */
  readonly user?: string;
  /** The vhost, once opened. */
  readonly vhost?: string;
  /**
   * Of `closed`: the reply text of the connection.close the server ended it with, if it did, and
   * for a refused login, in parentheses, why (which the client is not told, as on RabbitMQ).
   */
  readonly reason?: string;
}
