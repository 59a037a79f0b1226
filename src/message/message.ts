import { bodyLength } from './packed-message.js';
import type { FieldValue, MessageProperties, StoredMessage } from './types.js';
import { carryWireTypes, carryWireTypesWith } from './wire-types.js';

/**
 * Where a delivered message settles: the subscription (or `get` channel) it arrived on.
 * Delivery tags are scoped to it, as AMQP scopes them to a channel.
 */
export interface Settlement {
  ack(deliveryTag: number, multiple: boolean): Promise<void>;
  nack(deliveryTag: number, requeue: boolean, multiple: boolean): Promise<void>;
  cancel(): Promise<void>;
}

const decoder = new TextDecoder();

/**
 * A delivered message, shaped like `AMQPMessage` of `@cloudamqp/amqp-client` (same fields, same
 * `ack`/`nack`/`reject` defaults), plus `json()`.
 *
 * `properties` and `body` are built lazily: a consumer that never reads them costs no copy.
 * `body` is a private copy, so mutating it cannot change what other consumers of a stream see.
 */
export class Message {
  /** Delivery tag for `ack`/`nack`/`reject`, scoped to the subscription. 0 for no-ack gets. */
  readonly deliveryTag: number;
  /** Tag of the consumer it was delivered to (`""` for `get`). */
  readonly consumerTag: string;
  /** True when the message was delivered before and returned to the queue. */
  readonly redelivered: boolean;
  /** Messages left in the queue after this one (set by `get`, like basic.get-ok). */
  messageCount?: number;

  readonly #stored: StoredMessage;
  readonly #settlement: Settlement;
  readonly #extraHeader: string | undefined;
  readonly #extraValue: FieldValue;
  #properties: MessageProperties | undefined;
  #body: Uint8Array | undefined;
  #settled = false;

  /**
   * @param extraHeader a header the queue adds to this delivery (`x-stream-offset`,
   * `x-delivery-count`), overriding any value the publisher set.
   */
  constructor(
    stored: StoredMessage,
    deliveryTag: number,
    consumerTag: string,
    redelivered: boolean,
    settlement: Settlement,
    extraHeader?: string,
    extraValue?: FieldValue,
  ) {
    this.#stored = stored;
    this.deliveryTag = deliveryTag;
    this.consumerTag = consumerTag;
    this.redelivered = redelivered;
    this.#settlement = settlement;
    this.#extraHeader = extraHeader;
    this.#extraValue = extraValue;
  }

  /** Exchange the message was published to (`""` for the default exchange). */
  get exchange(): string {
    return this.#stored.exchange;
  }

  /** Routing key the message was published with. */
  get routingKey(): string {
    return this.#stored.routingKey;
  }

  /** Message properties (content type, headers, priority, ...). */
  get properties(): MessageProperties {
    if (this.#properties) return this.#properties;
    const stored = this.#stored.properties;
    const extra = this.#extraHeader;
    const headers = stored.headers;
    this.#properties =
      extra === undefined
        ? { ...stored, ...(headers && { headers: carryWireTypes(headers, { ...headers }) }) }
        : {
            ...stored,
            // A long whatever its value, as RabbitMQ writes `x-stream-offset` and
            // `x-delivery-count`: a client reading the tag sees the same type at every offset.
            headers: carryWireTypesWith(
              headers ?? {},
              { ...headers, [extra]: this.#extraValue },
              extra,
              'l',
            ),
          };
    return this.#properties;
  }

  /**
   * The name of the header the queue adds to this delivery (`x-stream-offset`,
   * `x-delivery-count`), if any; `storedProperties` are the properties without it, not copied.
   * For the AMQP server, which relays `x-delivery-count` only where RabbitMQ writes it.
   * @internal
   */
  get deliveryHeader(): string | undefined {
    return this.#extraHeader;
  }

  /** @internal See {@link deliveryHeader}. Never to be changed. */
  get storedProperties(): Readonly<MessageProperties> {
    return this.#stored.properties;
  }

  /**
   * @internal The stored body, not copied: for the AMQP server, which copies it into its output
   * at once. Never to be changed.
   */
  get storedBody(): Uint8Array {
    return this.#stored.body;
  }

  /** @internal Where the message settles (the subscription it came through). */
  get settlement(): Settlement {
    return this.#settlement;
  }

  /** The body bytes (a copy owned by this message). */
  get body(): Uint8Array {
    this.#body ??= this.#stored.body.slice();
    return this.#body;
  }

  /** A stream delivery's offset (also in header `x-stream-offset`); undefined for other queues. */
  get offset(): number | undefined {
    return this.#extraHeader === 'x-stream-offset' ? (this.#extraValue as number) : undefined;
  }

  /** Byte size of the body (read without making the body's view where it is kept packed). */
  get bodySize(): number {
    return bodyLength(this.#stored);
  }

  /** True once the message was acked, nacked or rejected through this object. */
  get isAcked(): boolean {
    return this.#settled;
  }

  /** The body decoded as UTF-8. */
  bodyString(): string {
    return decoder.decode(this.#body ?? this.#stored.body);
  }

  /** Alias of `bodyString()`, as `@cloudamqp/amqp-client` names it too. */
  bodyToString(): string {
    return this.bodyString();
  }

  /** The body parsed as JSON. */
  json<T = unknown>(): T {
    return JSON.parse(this.bodyString()) as T;
  }

  /** Acknowledges the message (and, with `multiple`, every earlier unsettled delivery). */
  ack(multiple = false): Promise<void> {
    this.#settled = true;
    return this.#settlement.ack(this.deliveryTag, multiple);
  }

  /** Negative acknowledgement: requeue it, or drop / dead-letter it (the default). */
  nack(requeue = false, multiple = false): Promise<void> {
    this.#settled = true;
    return this.#settlement.nack(this.deliveryTag, requeue, multiple);
  }

  /** Rejects the message: requeue it, or drop / dead-letter it (the default). */
  reject(requeue = false): Promise<void> {
    this.#settled = true;
    return this.#settlement.nack(this.deliveryTag, requeue, false);
  }

  /**
   * Records that the message was settled by its subscription on the application's behalf (auto
   * ack), so a later `ack()` by the application fails as a double ack would.
   * @internal
   */
  markSettled(): void {
    this.#settled = true;
  }

  /** Cancels the consumer the message was delivered to. */
  cancelConsumer(): Promise<void> {
    return this.#settlement.cancel();
  }
}
