/** Queue statistics of a classic queue, named as RabbitMQ's management API names them. */
export interface ClassicQueueStats {
  /** Ready plus unacknowledged messages. */
  readonly messages: number;
  readonly messagesReady: number;
  readonly messagesUnacknowledged: number;
  /** Body bytes of ready plus unacknowledged messages. */
  readonly messageBytes: number;
  readonly messageBytesReady: number;
  readonly messageBytesUnacknowledged: number;
  /** Consumers that acquire messages (browsers excluded). */
  readonly consumers: number;
  /** Browsers: consumers that read without acquiring (a last-value queue's `browse()`). */
  readonly browsers: number;
}
