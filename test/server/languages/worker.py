"""A pika service, as an application would write one, run against mqlite's server and RabbitMQ.

Connects to AMQP_URL and prints, as JSON on stdout, what it saw: every header value with the
Python type pika decoded it to. Names start with QUEUE (the same on both brokers). Modes:

- ``scenario``: a work queue with a priority, a dead-letter exchange and a TTL; confirmed
  publishes with every basic property and typed headers; a prefetch-2 consumer that acks one
  and rejects one (dead-lettered); ``basic.get`` of the last; message counts by passive declare.
- ``publish``: publishes one confirmed message with typed headers to the queue QUEUE.
- ``consume``: gets one message from the queue QUEUE (waiting for it) and acks it.
"""
import datetime
import decimal
import json
import os
import sys
import time

import pika

DEADLINE_S = 60

# Every type pika encodes (it has no float, and no integer narrower than 32 bits).
HEADERS = {
    'long': 2**40,
    'int': 100000,
    'negative': -7,
    'flag': True,
    'decimal': decimal.Decimal('123.45'),
    'timestamp': datetime.datetime(2023, 11, 14, 22, 13, 20),
    'bytes': b'\x00\x01\xff',
    'void': None,
    'text': 'ünïcode',
    'nested': {'inner': 9, 'deeper': {'last': False}},
    'list': [1, 'two', [3], {'k': 'v'}],
}


def typed(value):
    """A value with the name of its Python type, nested values likewise."""
    if isinstance(value, dict):
        shown = {key: typed(value[key]) for key in sorted(value)}
    elif isinstance(value, list):
        shown = [typed(item) for item in value]
    elif isinstance(value, decimal.Decimal):
        shown = str(value)
    elif isinstance(value, datetime.datetime):
        shown = value.isoformat()
    elif isinstance(value, bytes):
        shown = value.hex()
    else:
        shown = value
    return {'type': type(value).__name__, 'value': shown}


def headers_of(properties):
    """The headers, typed; an x-death `time` (when it happened) by its type only."""
    shown = typed(properties.headers or {})['value']
    for death in shown.get('x-death', {'value': []})['value']:
        death['value']['time']['value'] = '(a time)'
    return shown


def delivery(method, properties, body):
    """What a consumer sees of a delivery, but its consumer tag."""
    return {
        'body': body.decode(),
        'deliveryTag': method.delivery_tag,
        'redelivered': method.redelivered,
        'exchange': method.exchange,
        'routingKey': method.routing_key,
        'properties': {
            'contentType': properties.content_type,
            'contentEncoding': properties.content_encoding,
            'deliveryMode': properties.delivery_mode,
            'priority': properties.priority,
            'correlationId': properties.correlation_id,
            'replyTo': properties.reply_to,
            'expiration': properties.expiration,
            'messageId': properties.message_id,
            'timestamp': properties.timestamp,
            'type': properties.type,
            'userId': properties.user_id,
            'appId': properties.app_id,
            'headers': headers_of(properties),
        },
    }


def counts(channel, queue):
    ok = channel.queue_declare(queue, passive=True).method
    return {'messages': ok.message_count, 'consumers': ok.consumer_count}


def wait_for(channel, queue, messages):
    """Passive declares until the queue holds `messages`, or fails at the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while counts(channel, queue)['messages'] != messages:
        if time.monotonic() > deadline:
            raise TimeoutError(f'{queue} never held {messages} messages')


def scenario(channel, prefix):
    work, dead, dlx = f'{prefix}-work', f'{prefix}-dead', f'{prefix}-dlx'
    channel.exchange_declare(dlx, exchange_type='fanout', durable=False)
    channel.queue_declare(dead, durable=False)
    channel.queue_bind(dead, dlx)
    arguments = {'x-max-priority': 10, 'x-dead-letter-exchange': dlx, 'x-message-ttl': 600000}
    declared = channel.queue_declare(work, durable=False, arguments=arguments).method
    summary = {'declared': {'queue': declared.queue, 'messages': declared.message_count}}

    channel.confirm_delivery()
    for name, priority in (('low', 1), ('mid', 5), ('high', 9)):
        properties = pika.BasicProperties(
            content_type='application/json',
            content_encoding='utf-8',
            headers={**HEADERS, 'name': name},
            delivery_mode=2,
            priority=priority,
            correlation_id=f'corr-{name}',
            reply_to='replies',
            expiration='600000',
            message_id=f'id-{name}',
            timestamp=1700000000,
            type='greeting',
            user_id='guest',
            app_id='pika-worker',
        )
        # Raises on a nack or a return: a confirmed publish reached the queue.
        channel.basic_publish('', work, json.dumps({'name': name}), properties, mandatory=True)
    summary['afterPublish'] = counts(channel, work)

    channel.basic_qos(prefetch_count=2)
    consumed = []
    for method, properties, body in channel.consume(work, inactivity_timeout=DEADLINE_S):
        if method is None:
            raise TimeoutError(f'consumed {len(consumed)} of 2 messages')
        consumed.append((method, properties, body))
        if len(consumed) == 2:
            break
    summary['whileConsuming'] = counts(channel, work)
    channel.cancel()
    summary['consumed'] = [delivery(*d) for d in consumed]
    channel.basic_ack(consumed[0][0].delivery_tag)
    channel.basic_nack(consumed[1][0].delivery_tag, requeue=False)

    method, properties, body = channel.basic_get(work)
    summary['got'] = {**delivery(method, properties, body), 'messageCount': method.message_count}
    channel.basic_ack(method.delivery_tag)
    summary['afterGet'] = counts(channel, work)

    wait_for(channel, dead, 1)
    method, properties, body = channel.basic_get(dead, auto_ack=True)
    summary['deadLetter'] = delivery(method, properties, body)
    summary['afterDeadLetter'] = counts(channel, dead)

    channel.queue_delete(work)
    channel.queue_delete(dead)
    channel.exchange_delete(dlx)
    return summary


def publish(channel, queue):
    channel.queue_declare(queue, durable=False)
    channel.confirm_delivery()
    channel.basic_publish('', queue, 'typed', pika.BasicProperties(headers=HEADERS))
    return {'published': 1}


def consume(channel, queue):
    channel.queue_declare(queue, durable=False)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        method, properties, body = channel.basic_get(queue)
        if method is not None:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f'{queue} stayed empty')
    channel.basic_ack(method.delivery_tag)
    return delivery(method, properties, body)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else 'scenario'
    connection = pika.BlockingConnection(pika.URLParameters(os.environ['AMQP_URL']))
    channel = connection.channel()
    queue = os.environ['QUEUE']
    run = {'scenario': scenario, 'publish': publish, 'consume': consume}[mode]
    summary = run(channel, queue)
    connection.close()
    json.dump(summary, sys.stdout, sort_keys=True)


if __name__ == '__main__':
    main()
