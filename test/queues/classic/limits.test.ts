import { describe, expect, it } from 'vitest';
import { parseClassicArguments } from '../../../src/queues/arguments.js';
import { drain, publishAll, queuesPerTest, STORAGE_KINDS, settle, toDlq } from './support.js';

const limits = (args: Record<string, unknown>) => parseClassicArguments(args, 'jobs');

describe.each(STORAGE_KINDS)('limits changed while a queue runs (%s)', (kind) => {
  const queues = queuesPerTest(kind);

  it('a lower x-max-length drops and dead-letters the head at once, for good', async () => {
    const dlq = await queues.fifo('dlq');
    const jobs = await queues.fifo('jobs', { arguments: toDlq });
    await publishAll(jobs, ['1', '2', '3', '4']);
    await jobs.applyLimits(limits({ ...toDlq, 'x-max-length': 1 }));
    await settle();
    expect(await drain(dlq)).toEqual(['1', '2', '3']);
    expect(jobs.arguments.maxLength).toBeUndefined();
    expect(jobs.limits.maxLength).toBe(1);
    await queues.reopen();
    expect(await drain(await queues.fifo('jobs', { arguments: toDlq }))).toEqual(['4']);
  });

  it('a limit under x-overflow reject-publish refuses publishes and drops nothing', async () => {
    const jobs = await queues.fifo('jobs', { arguments: { 'x-overflow': 'reject-publish' } });
    await publishAll(jobs, ['1', '2']);
    await jobs.applyLimits(limits({ 'x-overflow': 'reject-publish', 'x-max-length': 1 }));
    await expect(jobs.publish('3')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect(await drain(jobs)).toEqual(['1', '2']);
  });

  it('a new x-message-ttl applies to messages published after it', async () => {
    const jobs = await queues.fifo('jobs');
    await publishAll(jobs, ['old']);
    await jobs.applyLimits(limits({ 'x-message-ttl': 100 }));
    await publishAll(jobs, ['new']);
    queues.clock.advance(101);
    expect(await drain(jobs)).toEqual(['old']);
  });

  it('a new x-expires restarts the countdown; without one the queue stays', async () => {
    const jobs = await queues.fifo('jobs', { arguments: { 'x-expires': 1000 } });
    queues.clock.advance(900);
    await jobs.applyLimits(limits({ 'x-expires': 500 }));
    queues.clock.advance(400);
    expect(jobs.closed).toBe(false);
    await jobs.applyLimits(limits({}));
    queues.clock.advance(10_000);
    expect(jobs.closed).toBe(false);
    await jobs.applyLimits(limits({ 'x-expires': 500 }));
    queues.clock.advance(500);
    expect(jobs.closed).toBe(true);
  });

  it('a lower x-delivery-limit dead-letters a message requeued past it', async () => {
    const dlq = await queues.fifo('dlq');
    const jobs = await queues.fifo('jobs', { arguments: toDlq });
    await jobs.applyLimits(limits({ ...toDlq, 'x-delivery-limit': 0 }));
    await publishAll(jobs, ['job']);
    await (await jobs.get({ noAck: false }))?.nack();
    await settle();
    expect(await drain(dlq)).toEqual(['job']);
  });
});
