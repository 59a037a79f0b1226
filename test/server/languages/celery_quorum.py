"""A Celery application whose task queue is a quorum queue, as RabbitMQ's guides declare one.

Environment: AMQP_URL (the broker), QUEUE (the task queue, and its exchange and routing key) and
CELERY_QOS, the prefetch the worker asks for:
- `consumer`: per-consumer QoS, which quorum queues require. Celery 5.5 and later do it by
  themselves for a queue declared `x-queue-type: quorum`; earlier ones read the server's
  `product` and ask a channel-global prefetch of RabbitMQ 3.3 and later, so an application on
  them makes kombu's transport report the spec's QoS semantics, as done here;
- `global`: a channel-global prefetch, which a quorum queue refuses (540 NOT_IMPLEMENTED);
- unset: whatever this Celery does by itself.

The task `record` appends its text to a file, the side effect a test looks for.
"""

import os

from celery import Celery
from kombu import Exchange, Queue
from kombu.transport import pyamqp

QUEUE = os.environ["QUEUE"]
QOS = os.environ.get("CELERY_QOS")

if QOS in ("consumer", "global"):
    per_consumer = QOS == "consumer"
    pyamqp.Transport.qos_semantics_matches_spec = lambda self, connection: per_consumer

app = Celery("celery_quorum", broker=os.environ["AMQP_URL"])
app.conf.update(
    task_queues=[
        Queue(
            QUEUE,
            Exchange(QUEUE, type="direct"),
            routing_key=QUEUE,
            queue_arguments={"x-queue-type": "quorum"},
        )
    ],
    task_default_queue=QUEUE,
    task_default_exchange=QUEUE,
    task_default_routing_key=QUEUE,
    worker_enable_remote_control=False,
    worker_prefetch_multiplier=1,
    # Celery 5.5 and later: no quorum detection when the test asks for the global prefetch.
    worker_detect_quorum_queues=QOS != "global",
    broker_connection_retry_on_startup=True,
)


@app.task
def record(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text + "\n")
    return text


if __name__ == "__main__":
    import sys

    record.delay(sys.argv[1], sys.argv[2])
