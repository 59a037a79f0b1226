// An amqp091-go service, as an application would write one, run against mqlite's server and
// RabbitMQ.
//
// It connects to AMQP_URL and prints, as JSON on stdout, what it saw: every header value with
// the Go type amqp091-go decoded it to. Names start with QUEUE (the same on both brokers).
// Modes (the first argument):
//
//   - scenario: a work queue with a priority, a dead-letter exchange and a TTL; confirmed
//     publishes with every basic property and typed headers; a prefetch-2 consumer that acks
//     one and rejects one (dead-lettered); basic.get of the last; message counts by passive
//     declare.
//   - publish: publishes one confirmed message with typed headers to the queue QUEUE.
//   - consume: gets one message from the queue QUEUE (waiting for it) and acks it.
package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const deadline = 60 * time.Second

// The typed headers amqplib publishes in the Node tests (test/server/typed-headers.ts), but the
// unsigned short and int: amqp091-go reads neither, so sends neither.
func headers() amqp.Table {
	return amqp.Table{
		"long":         int64(7),
		"wideLong":     int64(1) << 40,
		"byte":         int8(-5),
		"unsignedByte": uint8(200),
		"short":        int16(-300),
		"int":          int32(100000),
		"float":        float32(1.5),
		"double":       float64(3),
		"fraction":     float64(0.25),
		"decimal":      amqp.Decimal{Scale: 2, Value: 12345},
		"timestamp":    time.Unix(1700000000, 0),
		"bytes":        []byte{0, 1, 255},
		"void":         nil,
		"flag":         true,
		"text":         "ünïcode",
		"nested":       amqp.Table{"inner": int16(9), "deeper": amqp.Table{"last": int8(1)}},
		"list":         []interface{}{int8(1), int64(2), "three", []interface{}{int16(4)}},
	}
}

type typedValue struct {
	Type  string      `json:"type"`
	Value interface{} `json:"value"`
}

// typed is a value with the name of its Go type, nested values likewise.
func typed(v interface{}) typedValue {
	shown := v
	switch x := v.(type) {
	case amqp.Table:
		table := map[string]typedValue{}
		for key, item := range x {
			table[key] = typed(item)
		}
		shown = table
	case []interface{}:
		items := []typedValue{}
		for _, item := range x {
			items = append(items, typed(item))
		}
		shown = items
	case []byte:
		shown = hex.EncodeToString(x)
	case time.Time:
		shown = x.Unix()
	case amqp.Decimal:
		shown = map[string]interface{}{"scale": x.Scale, "value": x.Value}
	}
	return typedValue{Type: fmt.Sprintf("%T", v), Value: shown}
}

// headersOf are the headers, typed; an x-death `time` (when it happened) by its type only.
func headersOf(h amqp.Table) interface{} {
	shown := typed(h).Value.(map[string]typedValue)
	if deaths, ok := shown["x-death"]; ok {
		for _, death := range deaths.Value.([]typedValue) {
			entry := death.Value.(map[string]typedValue)
			entry["time"] = typedValue{Type: entry["time"].Type, Value: "(a time)"}
		}
	}
	return shown
}

// delivery is what a consumer sees of a delivery, but its consumer tag.
func delivery(d amqp.Delivery) map[string]interface{} {
	return map[string]interface{}{
		"body":        string(d.Body),
		"deliveryTag": d.DeliveryTag,
		"redelivered": d.Redelivered,
		"exchange":    d.Exchange,
		"routingKey":  d.RoutingKey,
		"properties": map[string]interface{}{
			"contentType":     d.ContentType,
			"contentEncoding": d.ContentEncoding,
			"deliveryMode":    d.DeliveryMode,
			"priority":        d.Priority,
			"correlationId":   d.CorrelationId,
			"replyTo":         d.ReplyTo,
			"expiration":      d.Expiration,
			"messageId":       d.MessageId,
			"timestamp":       d.Timestamp.Unix(),
			"type":            d.Type,
			"userId":          d.UserId,
			"appId":           d.AppId,
			"headers":         headersOf(d.Headers),
		},
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func counts(ch *amqp.Channel, queue string) map[string]int {
	q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
	must(err)
	return map[string]int{"messages": q.Messages, "consumers": q.Consumers}
}

// waitFor passively declares the queue until it holds `messages`, or fails at the deadline.
func waitFor(ch *amqp.Channel, queue string, messages int) {
	until := time.Now().Add(deadline)
	for counts(ch, queue)["messages"] != messages {
		if time.Now().After(until) {
			must(fmt.Errorf("%s never held %d messages", queue, messages))
		}
	}
}

// publishConfirmed publishes and waits for the broker's confirm. It listens with NotifyPublish:
// amqp091-go 1.5's PublishWithDeferredConfirm registers its confirm after sending the publish,
// so a confirm that arrives first is lost and Wait blocks forever (on RabbitMQ too).
func publishConfirmed(ch *amqp.Channel, confirms <-chan amqp.Confirmation, queue string, msg amqp.Publishing) {
	must(ch.Publish("", queue, true, false, msg))
	select {
	case c := <-confirms:
		if !c.Ack {
			must(fmt.Errorf("the broker refused a publish to %s", queue))
		}
	case <-time.After(deadline):
		must(fmt.Errorf("no confirm of a publish to %s", queue))
	}
}

// confirming puts the channel in confirm mode and returns where its confirms arrive.
func confirming(ch *amqp.Channel) <-chan amqp.Confirmation {
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 3))
	must(ch.Confirm(false))
	return confirms
}

func scenario(ch *amqp.Channel, prefix string) map[string]interface{} {
	work, dead, dlx := prefix+"-work", prefix+"-dead", prefix+"-dlx"
	must(ch.ExchangeDeclare(dlx, "fanout", false, false, false, false, nil))
	_, err := ch.QueueDeclare(dead, false, false, false, false, nil)
	must(err)
	must(ch.QueueBind(dead, "", dlx, false, nil))
	args := amqp.Table{"x-max-priority": int32(10), "x-dead-letter-exchange": dlx, "x-message-ttl": int32(600000)}
	declared, err := ch.QueueDeclare(work, false, false, false, false, args)
	must(err)
	summary := map[string]interface{}{
		"declared": map[string]interface{}{"queue": declared.Name, "messages": declared.Messages},
	}

	returns := ch.NotifyReturn(make(chan amqp.Return, 3))
	confirms := confirming(ch)
	for _, m := range []struct {
		name     string
		priority uint8
	}{{"low", 1}, {"mid", 5}, {"high", 9}} {
		h := headers()
		h["name"] = m.name
		publishConfirmed(ch, confirms, work, amqp.Publishing{
			ContentType:     "application/json",
			ContentEncoding: "utf-8",
			Headers:         h,
			DeliveryMode:    amqp.Persistent,
			Priority:        m.priority,
			CorrelationId:   "corr-" + m.name,
			ReplyTo:         "replies",
			Expiration:      "600000",
			MessageId:       "id-" + m.name,
			Timestamp:       time.Unix(1700000000, 0),
			Type:            "greeting",
			UserId:          "guest",
			AppId:           "go-worker",
			Body:            []byte(fmt.Sprintf(`{"name":"%s"}`, m.name)),
		})
	}
	summary["returned"] = len(returns)
	summary["afterPublish"] = counts(ch, work)

	must(ch.Qos(2, 0, false))
	deliveries, err := ch.Consume(work, "worker", false, false, false, false, nil)
	must(err)
	var consumed []amqp.Delivery
	for len(consumed) < 2 {
		select {
		case d := <-deliveries:
			consumed = append(consumed, d)
		case <-time.After(deadline):
			must(fmt.Errorf("consumed %d of 2 messages", len(consumed)))
		}
	}
	summary["whileConsuming"] = counts(ch, work)
	must(ch.Cancel("worker", false))
	shown := []interface{}{}
	for _, d := range consumed {
		shown = append(shown, delivery(d))
	}
	summary["consumed"] = shown
	must(consumed[0].Ack(false))
	must(consumed[1].Nack(false, false))

	got, ok, err := ch.Get(work, false)
	must(err)
	if !ok {
		must(fmt.Errorf("%s was empty", work))
	}
	gotShown := delivery(got)
	gotShown["messageCount"] = got.MessageCount
	summary["got"] = gotShown
	must(got.Ack(false))
	summary["afterGet"] = counts(ch, work)

	waitFor(ch, dead, 1)
	deadLetter, _, err := ch.Get(dead, true)
	must(err)
	summary["deadLetter"] = delivery(deadLetter)
	summary["afterDeadLetter"] = counts(ch, dead)

	_, err = ch.QueueDelete(work, false, false, false)
	must(err)
	_, err = ch.QueueDelete(dead, false, false, false)
	must(err)
	must(ch.ExchangeDelete(dlx, false, false))
	return summary
}

func publish(ch *amqp.Channel, queue string) map[string]interface{} {
	_, err := ch.QueueDeclare(queue, false, false, false, false, nil)
	must(err)
	publishConfirmed(ch, confirming(ch), queue, amqp.Publishing{Headers: headers(), Body: []byte("typed")})
	return map[string]interface{}{"published": 1}
}

func consume(ch *amqp.Channel, queue string) map[string]interface{} {
	_, err := ch.QueueDeclare(queue, false, false, false, false, nil)
	must(err)
	until := time.Now().Add(deadline)
	for {
		d, ok, err := ch.Get(queue, false)
		must(err)
		if ok {
			must(d.Ack(false))
			return delivery(d)
		}
		if time.Now().After(until) {
			must(fmt.Errorf("%s stayed empty", queue))
		}
	}
}

func main() {
	mode := "scenario"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	run := map[string]func(*amqp.Channel, string) map[string]interface{}{
		"scenario": scenario, "publish": publish, "consume": consume,
	}[mode]
	if run == nil {
		must(fmt.Errorf("unknown mode %q", mode))
	}
	conn, err := amqp.Dial(os.Getenv("AMQP_URL"))
	must(err)
	ch, err := conn.Channel()
	must(err)
	summary := run(ch, os.Getenv("QUEUE"))
	must(conn.Close())
	must(json.NewEncoder(os.Stdout).Encode(summary))
}
