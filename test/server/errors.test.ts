import { describe, expect, test } from 'vitest';
import { ClosedError, NotFoundError } from '../../src/errors.js';
import { toAmqpException } from '../../src/server/errors.js';

describe('broker errors as AMQP exceptions', () => {
  test('a queue closed under a method closes the channel with 404, not the connection', () => {
    const exception = toAmqpException(new ClosedError("queue 'q' is closed"), false);
    expect(exception.replyCode).toBe(404);
    expect(exception.closesConnection).toBe(false);
    expect(exception.replyText).toBe("NOT_FOUND - queue 'q' is closed");
  });

  test('a closed broker is its shutdown: 320 closes the connection', () => {
    const exception = toAmqpException(new ClosedError('broker is closed'), true);
    expect(exception.replyCode).toBe(320);
    expect(exception.closesConnection).toBe(true);
  });

  test("other errors keep their reply code and the broker's wording", () => {
    const exception = toAmqpException(new NotFoundError("no queue 'q' in vhost '/'"), false);
    expect(exception.replyText).toBe("NOT_FOUND - no queue 'q' in vhost '/'");
  });
});
