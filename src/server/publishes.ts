/**
 * The publishes of one channel, once assembled from their frames (content.ts): checked, sent to
 * the broker (a direct reply straight to its channel), returned when mandatory and unroutable,
 * and, in confirm mode, confirmed once stored or refused (confirms.ts).
 */
import type { ExchangePublishOptions } from '../broker/exchange-handle.js';
import { NoRouteError, QueueFullError } from '../errors.js';
import { unchangingProperties } from '../message/normalize.js';
import type { MessageProperties } from '../message/types.js';
import type { ChannelContext, ChannelHost } from './channel-host.js';
import { Confirms } from './confirms.js';
import type { ChannelConsumers } from './consumers.js';
import type { Publish } from './content.js';
import { AmqpException, toAmqpException } from './errors.js';
import { REPLY_TO, ReplyAddresses } from './reply-to.js';
import { writeContent, writeMethod } from './wire/methods.js';

export class ChannelPublishes {
  readonly #channel: ChannelContext;
  readonly #host: ChannelHost;
  readonly #id: number;
  /** Where a request's `reply-to: amq.rabbitmq.reply-to` finds the channel's address. */
  readonly #consumers: ChannelConsumers;
  #confirms: Confirms | undefined;
  #lastOptions: ExchangePublishOptions | undefined;
  #lastProperties: MessageProperties | undefined;

  constructor(channel: ChannelContext, consumers: ChannelConsumers) {
    this.#channel = channel;
    this.#host = channel.host;
    this.#id = channel.id;
    this.#consumers = consumers;
  }

  /** Whether the channel is in confirm mode. */
  get confirming(): boolean {
    return this.#confirms !== undefined;
  }

  /** Puts the channel in confirm mode (confirm.select): publishes are numbered from now on. */
  selectConfirms(): void {
    this.#confirms ??= new Confirms((kind, deliveryTag, multiple) => {
      if (!this.#channel.open) return;
      this.#host.write((w) =>
        kind === 'ack'
          ? writeMethod(w, this.#id, 'basic.ack', { deliveryTag, multiple })
          : writeMethod(w, this.#id, 'basic.nack', { deliveryTag, multiple, requeue: false }),
      );
    }, this.#host.dueConfirms);
  }

  /**
   * Publishes `content`; returns when the broker has stored or refused it (undefined for a
   * direct reply, delivered at once).
   * @throws AmqpException 406 for a `user-id` that is not the user's, or a reply to
   *   `amq.rabbitmq.reply-to` from a channel that does not consume its replies.
   */
  publish(content: Publish): Promise<void> | undefined {
    const { exchange, routingKey, mandatory } = content.args;
    const properties = content.properties;
    const host = this.#host;
    if (properties.userId !== undefined && properties.userId !== host.user) {
      throw new AmqpException(
        406,
        `user_id property set to '${properties.userId}' but authenticated user was '${host.user}'`,
      );
    }
    let replyTo = properties.replyTo;
    if (replyTo === REPLY_TO) {
      replyTo = this.#consumers.replyAddress;
      if (replyTo === undefined) throw new AmqpException(406, 'fast reply consumer does not exist');
    }
    const seq = this.#confirms?.take();
    if (exchange === '' && ReplyAddresses.isAddress(routingKey)) {
      // A reply: straight to its channel; one whose channel is gone is dropped, as RabbitMQ does.
      host.replies.find(routingKey)?.deliverReply(routingKey, properties, content.body);
      if (seq !== undefined) this.#confirms!.settle(seq, true);
      return;
    }
    host.backlog(1);
    const counts = host.counts;
    if (counts !== undefined) {
      counts.totals.publish++;
      counts.exchange(exchange).publish++;
    }
    const options = this.#options(properties, replyTo, routingKey, mandatory);
    if (seq === undefined && !mandatory) {
      // Nothing of this publish is needed to settle it (no confirm, no return): the channel's
      // own handlers, no closures per message.
      return host.broker.publish(exchange, content.body, options).then(this.#done, this.#failed);
    }
    // Confirmed once routed when it asks for no durability (`routed`), else once stored.
    let confirm = seq;
    const stored =
      seq === undefined
        ? host.broker.publish(exchange, content.body, options)
        : host.broker.publishRouted(exchange, content.body, options, () => {
            confirm = undefined;
            this.#confirms!.settle(seq, true);
          });
    return stored.then(
      () => {
        this.#done();
        if (confirm !== undefined) this.#confirms!.settle(confirm, true);
      },
      (error: unknown) => {
        if (!(error instanceof NoRouteError)) {
          if (confirm !== undefined) this.#confirms!.settle(confirm, false);
          this.#failed(error);
          return;
        }
        host.backlog(-1);
        this.#return(content, 312, 'NO_ROUTE');
        if (counts !== undefined) counts.totals.returnUnroutable++;
        if (confirm !== undefined) this.#confirms!.settle(confirm, true);
      },
    );
  }

  /** A publish is stored. */
  readonly #done = (): void => {
    this.#host.backlog(-1);
  };

  /**
   * A publish failed (its confirm, if any, nacked already): a full queue drops it, as RabbitMQ's
   * `reject-publish` does; anything else closes the channel.
   */
  readonly #failed = (error: unknown): void => {
    this.#host.backlog(-1);
    if (error instanceof QueueFullError) return;
    this.#channel.exception(toAmqpException(error, this.#host.broker.closed), 60, 40);
  };

  /**
   * The broker's options of a publish: the last ones again while the publisher sends the same
   * properties (one object, see `ContentHeaderReader`) to the same routing key, so the broker
   * normalizes them once and the queue keeps one properties object for the run.
   */
  #options(
    properties: MessageProperties,
    replyTo: string | undefined,
    routingKey: string,
    mandatory: boolean,
  ): ExchangePublishOptions {
    const last = this.#lastOptions;
    if (
      last !== undefined &&
      properties === this.#lastProperties &&
      replyTo === last.replyTo &&
      routingKey === last.routingKey &&
      mandatory === last.mandatory
    ) {
      return unchangingProperties(last);
    }
    const options = unchangingProperties(
      Object.freeze(publishOptions(properties, replyTo, routingKey, mandatory)),
    );
    this.#lastOptions = options;
    this.#lastProperties = properties;
    return options;
  }

  #return(content: Publish, replyCode: number, replyText: string): void {
    if (!this.#channel.open) return;
    const { exchange, routingKey } = content.args;
    const frameMax = this.#host.frameMax;
    this.#host.write((w) => {
      writeMethod(w, this.#id, 'basic.return', { replyCode, replyText, exchange, routingKey });
      writeContent(w, this.#id, content.properties, content.body, frameMax);
    });
  }
}

/**
 * The broker's publish options of a wire publish, every property in its slot (undefined when
 * absent, which the broker skips): one object shape for every publish, where spreading the
 * decoded properties cost more than the rest of the publish.
 */
function publishOptions(
  p: MessageProperties,
  replyTo: string | undefined,
  routingKey: string,
  mandatory: boolean,
): ExchangePublishOptions {
  return {
    contentType: p.contentType,
    contentEncoding: p.contentEncoding,
    headers: p.headers,
    deliveryMode: p.deliveryMode,
    priority: p.priority,
    correlationId: p.correlationId,
    replyTo,
    expiration: p.expiration,
    messageId: p.messageId,
    timestamp: p.timestamp,
    type: p.type,
    userId: p.userId,
    appId: p.appId,
    routingKey,
    mandatory,
  } as ExchangePublishOptions;
}
