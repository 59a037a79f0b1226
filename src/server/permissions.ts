/**
 * What a user may do within a virtual host, as RabbitMQ's internal authorisation decides it: three
 * regular expressions, `configure`, `write` and `read`, each matched against the name of the queue
 * or exchange an operation touches. A pattern matches anywhere in the name unless it anchors
 * itself (`^...$`), as Erlang's `re:run` does; `.*` grants everything, `''` nothing. Which method
 * needs which permission on which resource, and in which order they are checked, is RabbitMQ
 * 3.10's channel: declaring and deleting need configure (a passive declare nothing), a binding
 * write on its destination and read on its source, a publish write on its exchange, get, consume
 * and purge read on the queue. The default exchange `''` is the resource `amq.default`.
 *
 * Topic permissions narrow that per exchange, for topic exchanges only: a publish's routing key
 * must match the user's `write` pattern for its exchange, and the binding key of a queue or
 * exchange binding (or unbinding) must match `read` for its source. An exchange without an entry
 * allows every key. `{username}` and `{vhost}` in a topic pattern are replaced by the user's and
 * the vhost's names as they are, unescaped, as RabbitMQ 3.10 expands them for AMQP 0-9-1
 * (`{client_id}` is MQTT's and stays literal).
 */
import { checkQueueName } from '../broker/queue-name.js';
import { resourceName } from '../errors.js';
import { isExchangeType } from '../exchanges/types.js';
import { AmqpException } from './errors.js';
import { REPLY_TO } from './reply-to.js';
import type { ArgsOf, Method } from './wire/spec.js';

/** A user's patterns in one vhost, as a definitions file's `permissions` entry holds them. */
export interface PermissionPatterns {
  readonly configure: string;
  readonly write: string;
  readonly read: string;
}

type Permission = keyof PermissionPatterns;

/** A user's topic patterns for one exchange, as a definitions file's `topic_permissions` entry. */
export interface TopicPatterns {
  readonly write: string;
  readonly read: string;
}

type TopicPermission = keyof TopicPatterns;

/** What the checks need of the channel and its broker. */
export interface PermissionScope {
  /** The queue a method's queue name means (`''`: the channel's last declared, 404 without one). */
  queueName(name: string): string;
  /** RabbitMQ checks a dead-letter or alternate exchange only when it creates the resource. */
  hasQueue(name: string): boolean;
  /** The exchange of that name, or undefined: topic permissions apply to topic exchanges only. */
  exchange(name: string): { readonly type: string; readonly internal: boolean } | undefined;
}

const DEFAULT_EXCHANGE_RESOURCE = 'amq.default';

/** One user's permissions in one vhost. */
export class Permissions {
  /** Everything granted: a server whose users come with plain passwords. */
  static readonly ALL = new Permissions('', '', undefined, new Map());

  readonly #user: string;
  readonly #vhost: string;
  /** Undefined: everything granted, nothing checked. */
  readonly #patterns: Readonly<Record<Permission, RegExp>> | undefined;
  /** Topic patterns by exchange name. */
  readonly #topics: ReadonlyMap<string, Readonly<Record<TopicPermission, RegExp>>>;

  private constructor(
    user: string,
    vhost: string,
    patterns: Readonly<Record<Permission, RegExp>> | undefined,
    topics: ReadonlyMap<string, Readonly<Record<TopicPermission, RegExp>>>,
  ) {
    this.#user = user;
    this.#vhost = vhost;
    this.#patterns = patterns;
    this.#topics = topics;
  }

  /**
   * The permissions `patterns` give `user` in `vhost`, narrowed on topic exchanges by `topics`
   * (topic patterns by exchange name).
   * @throws SyntaxError for a pattern that is no regular expression (a topic pattern once its
   *   variables are replaced).
   */
  static of(
    user: string,
    vhost: string,
    patterns: PermissionPatterns,
    topics: ReadonlyMap<string, TopicPatterns> = new Map(),
  ): Permissions {
    const topicPatterns = new Map<string, Record<TopicPermission, RegExp>>();
    for (const [exchange, { write, read }] of topics) {
      topicPatterns.set(exchange, {
        write: compile(expandTopicVariables(write, user, vhost)),
        read: compile(expandTopicVariables(read, user, vhost)),
      });
    }
    const compiled = {
      configure: compile(patterns.configure),
      write: compile(patterns.write),
      read: compile(patterns.read),
    };
    return new Permissions(user, vhost, compiled, topicPatterns);
  }

  /**
   * Checks a method about to run on a channel, before the broker sees it.
   * @throws AmqpException 403 ACCESS_REFUSED, in RabbitMQ's words, for the first check that fails.
   */
  authorize(method: Method, scope: PermissionScope): void {
    if (this.#patterns === undefined) return;
    switch (method.name) {
      case 'queue.declare':
        if (!method.args.passive) this.#declareQueue(method.args, scope);
        break;
      case 'queue.delete':
        this.#check('configure', 'queue', scope.queueName(method.args.queue));
        break;
      case 'queue.purge':
      case 'basic.get':
        this.#check('read', 'queue', scope.queueName(method.args.queue));
        break;
      case 'basic.consume':
        if (method.args.queue !== REPLY_TO) {
          this.#check('read', 'queue', scope.queueName(method.args.queue));
        }
        break;
      case 'queue.bind':
      case 'queue.unbind': {
        const { queue, exchange, routingKey } = method.args;
        this.#binding('queue', scope.queueName(queue), exchange, routingKey, scope);
        break;
      }
      case 'exchange.bind':
      case 'exchange.unbind': {
        const { destination, source, routingKey } = method.args;
        this.#binding('exchange', destination, source, routingKey, scope);
        break;
      }
      case 'exchange.declare':
        // An unknown type (406) and the default exchange are refused before permissions.
        if (!method.args.passive && isExchangeType(method.args.type) && method.args.exchange) {
          this.#declareExchange(method.args, scope);
        }
        break;
      case 'exchange.delete': {
        const name = method.args.exchange;
        // The default and the system exchanges are refused before permissions.
        if (name !== '' && !name.startsWith('amq.')) this.#check('configure', 'exchange', name);
        break;
      }
    }
  }

  #declareQueue(a: ArgsOf<'queue.declare'>, scope: PermissionScope): void {
    // A reserved or malformed name is refused before permissions, as the broker would. For a
    // server-named queue, a name as the broker makes them: no pattern anyone writes tells one
    // generated name from another.
    const name = checkQueueName(a.queue, true, true);
    this.#check('configure', 'queue', name);
    const deadLetter = a.arguments['x-dead-letter-exchange'];
    if (typeof deadLetter === 'string' && !scope.hasQueue(name)) {
      this.#check('read', 'queue', name);
      this.#check('write', 'exchange', deadLetter);
    }
  }

  #declareExchange(a: ArgsOf<'exchange.declare'>, scope: PermissionScope): void {
    const name = a.exchange;
    this.#check('configure', 'exchange', name);
    const alternate = a.arguments['alternate-exchange'];
    if (typeof alternate === 'string' && !name.startsWith('amq.') && !scope.exchange(name)) {
      this.#check('read', 'exchange', name);
      this.#check('write', 'exchange', alternate);
    }
  }

  /**
   * Checks a publish to `exchange`, before its other checks (a missing exchange is 404 only to a
   * user who may write to it), then its routing key against the topic permissions of a topic
   * exchange. A missing or internal exchange is left to the broker's 404 and 403, which come
   * before the topic check in RabbitMQ.
   * @throws AmqpException 403 ACCESS_REFUSED.
   */
  publish(exchange: string, routingKey: string, scope: PermissionScope): void {
    if (this.#patterns === undefined) return;
    this.#check('write', 'exchange', exchange);
    if (this.#topics.has(exchange) && scope.exchange(exchange)?.internal === false) {
      this.#checkTopic('write', exchange, routingKey, scope);
    }
  }

  /**
   * Write on the destination, then read on the source (the default exchange: the broker's 403),
   * then the binding key against the source's topic permissions (a missing source: the broker's
   * 404, a missing queue only after this).
   */
  #binding(
    kind: 'queue' | 'exchange',
    destination: string,
    source: string,
    routingKey: string,
    scope: PermissionScope,
  ): void {
    this.#check('write', kind, destination);
    if (source === '') return;
    this.#check('read', 'exchange', source);
    this.#checkTopic('read', source, routingKey, scope);
  }

  #checkTopic(
    permission: TopicPermission,
    exchange: string,
    routingKey: string,
    scope: PermissionScope,
  ): void {
    const patterns = this.#topics.get(exchange);
    if (patterns === undefined || scope.exchange(exchange)?.type !== 'topic') return;
    if (patterns[permission].test(routingKey)) return;
    throw new AmqpException(
      403,
      `access to topic '${routingKey}' in ${resourceName('exchange', exchange, this.#vhost)} refused for user '${this.#user}'`,
    );
  }

  #check(permission: Permission, kind: 'queue' | 'exchange', name: string): void {
    const resource = kind === 'exchange' && name === '' ? DEFAULT_EXCHANGE_RESOURCE : name;
    if (this.#patterns![permission].test(resource)) return;
    throw new AmqpException(
      403,
      `access to ${resourceName(kind, resource, this.#vhost)} refused for user '${this.#user}'`,
    );
  }
}

/**
 * A topic pattern with `{username}` and `{vhost}` replaced, unescaped, as RabbitMQ 3.10 replaces
 * them (the user's first, so a user name holding `{vhost}` has it replaced too).
 */
export function expandTopicVariables(pattern: string, user: string, vhost: string): string {
  // Functions, so a `$` in a name is no replacement pattern.
  return pattern.replaceAll('{username}', () => user).replaceAll('{vhost}', () => vhost);
}

/** RabbitMQ reads an empty pattern as `^$`: it grants nothing (no name is empty). */
function compile(pattern: string): RegExp {
  return new RegExp(pattern === '' ? '^$' : pattern);
}
