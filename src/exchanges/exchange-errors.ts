/** The errors about exchanges that name their virtual host, worded as RabbitMQ words them. */
import { AccessRefusedError, NotFoundError, resourceName } from '../errors.js';

export class ExchangeErrors {
  readonly #vhost: string;

  constructor(vhost: string) {
    this.#vhost = vhost;
  }

  exchangeText(name: string): string {
    return resourceName('exchange', name, this.#vhost);
  }

  notFound(name: string): NotFoundError {
    return new NotFoundError(`no ${this.exchangeText(name)}`);
  }

  defaultRefused(): AccessRefusedError {
    return new AccessRefusedError('operation not permitted on the default exchange');
  }
}
