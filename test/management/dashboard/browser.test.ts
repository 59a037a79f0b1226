/**
 * The dashboard as a person sees it: Chromium loads the page from a broker with traffic, signs
 * in, and the test reads what the pages show (a queue's depth, a rate, a peeked body) and closes
 * a connection from its button. Against RabbitMQ's management plugin too, through a listener
 * that serves the page beside the plugin's API: the page reads nothing RabbitMQ does not answer.
 * `UPDATE_SCREENSHOTS=1` saves mqlite's pages as the README shows them.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqplib, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { chromiumMissing, launchChromium } from './chromium.js';
import { dashboardTargets } from './targets.js';

/** The page's document, as the functions run in the browser see it (the tests have no DOM types). */
declare const document: {
  querySelector(
    selector: string,
  ): { textContent: string | null; getAttribute(name: string): string | null } | null;
};

const missing = chromiumMissing();
const WAIT_MS = 60_000;
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS
  ? join(import.meta.dirname, '../../../assets/dashboard')
  : join(tmpdir(), 'mqlite-dashboard-screenshots');

for (const target of await dashboardTargets()) {
  const skip = missing ?? target.missing;
  describe.skipIf(skip !== undefined)(
    `the dashboard in Chromium, against ${target.name}${skip ? ` (skipped: ${skip})` : ''}`,
    () => {
      const p = `dash-${randomBytes(3).toString('hex')}`;
      const jobs = `${p}-jobs`;
      // A name a careless page would render as markup.
      const odd = `${p}-<b>odd</b>/"name"`;
      const busy = `${p}-busy`;
      let browser: Browser;
      let page: Page;
      let app: ChannelModel;
      let doomed: ChannelModel;
      let publisher: ReturnType<typeof setInterval>;
      let base: string;
      /** Errors the page's scripts threw: none is expected. */
      const errors: string[] = [];

      beforeAll(async () => {
        base = await target.start();
        app = await amqplib.connect(target.amqpUrl(), {
          clientProperties: { connection_name: `${p}-app` },
        });
        doomed = await amqplib.connect(target.amqpUrl(), {
          clientProperties: { connection_name: `${p}-doomed` },
        });
        doomed.on('error', () => {});
        const channel: ConfirmChannel = await app.createConfirmChannel();
        await channel.assertQueue(jobs, { arguments: { 'x-max-length': 1000 } });
        await channel.bindQueue(jobs, 'amq.direct', `${p}.jobs`);
        for (const n of [1, 2, 3])
          channel.publish('amq.direct', `${p}.jobs`, Buffer.from(`job ${n}`));
        await channel.waitForConfirms();
        await channel.assertQueue(busy);
        await channel.assertQueue(odd);
        await channel.prefetch(20);
        await channel.consume(busy, (m) => m && channel.ack(m), { consumerTag: `${p}-worker` });
        // Steady traffic for the rates, until the suite ends.
        publisher = setInterval(() => {
          for (let i = 0; i < 10; i++) channel.sendToQueue(busy, Buffer.from(`tick ${i}`));
        }, 100);
        browser = await launchChromium();
        page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
        page.on('pageerror', (error) => errors.push(error.message));
      });

      afterAll(async () => {
        clearInterval(publisher);
        await browser?.close();
        const channel = await app?.createChannel();
        await channel?.deleteQueue(jobs);
        await channel?.deleteQueue(odd);
        await channel?.deleteQueue(busy);
        await app?.close();
        await doomed?.close().catch(() => {});
        await target.stop();
      });

      /** Waits until the element `selector` finds holds `text` (a regular expression's source). */
      async function shows(selector: string, text: string): Promise<void> {
        await page.waitForFunction(
          ([s, t]) => new RegExp(t!).test(document.querySelector(s!)?.textContent ?? ''),
          [selector, text],
          { timeout: WAIT_MS, polling: 200 },
        );
      }

      /** Saves the page as `name`.png; the README's are mqlite's, with a minute of samples. */
      async function screenshot(name: string, fullPage = false): Promise<void> {
        if (process.env.UPDATE_SCREENSHOTS && target.name !== 'mqlite') return;
        mkdirSync(SCREENSHOTS, { recursive: true });
        await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage });
      }

      test('signs in with the broker users and refuses a wrong password', async () => {
        await page.goto(base);
        await page.fill('input[name=username]', 'guest');
        await page.fill('input[name=password]', 'wrong');
        await page.click('#login button');
        await shows('#login-error', 'Login failed');
        await page.fill('input[name=password]', 'guest');
        await page.click('#login button');
        await page.waitForSelector('#nav a.current[data-page=overview]', { timeout: WAIT_MS });
        await page.selectOption('#interval', '2');
      });

      test('the overview plots the publish rate and counts the queued messages', async () => {
        await shows('[data-card=publish-rate] .value', '^[1-9][\\d,]*\\.\\d/s$');
        await shows('[data-card=messages] .value', '^[1-9]');
        expect(await page.locator('[data-chart=rates] canvas').count()).toBe(1);
        // A few samples on the chart before it is shown.
        await shows('[data-card=deliver-rate] .value', '^[1-9]');
        if (process.env.UPDATE_SCREENSHOTS)
          await page.waitForFunction(
            () =>
              Number(document.querySelector('[data-chart=rates]')?.getAttribute('data-samples')) >=
              30,
            undefined,
            { timeout: 120_000, polling: 500 },
          );
        await screenshot('overview');
      });

      test('the queues page shows depth and consumers, filtered by name and sorted', async () => {
        await page.click('#nav a[data-page=queues]');
        await page.fill('input[type=search]', p);
        await shows(`tr[data-queue="${jobs}"] [data-column=Messages]`, '^3$');
        await shows(`tr[data-queue="${busy}"] [data-column=Consumers]`, '^1$');
        await shows('.summary', '^3 of \\d+ queues$');
        await shows(`tr[data-queue="${busy}"] [data-column="Deliver / get"]`, '^[1-9]');
        await page.click('th button:text-is("Consumers")');
        const order = await page.$$eval('tbody tr', (rows) => rows.map((r) => r.dataset.queue));
        expect(order[0]).toBe(busy);
        expect(order).toHaveLength(3);
        expect(await page.locator('tbody b').count()).toBe(0);
        await page.click('th button:text-is("Name")');
        const byName = await page.$$eval('tbody tr', (rows) => rows.map((r) => r.dataset.queue));
        await page.click('th button:text-is("Name")');
        const reversed = await page.$$eval('tbody tr', (rows) => rows.map((r) => r.dataset.queue));
        expect(reversed).toEqual(byName.toReversed());
        await screenshot('queues');
      });

      test("a queue's page shows its arguments, bindings, consumers and peeked messages", async () => {
        await page.click(`a:text-is("${busy}")`);
        await shows('main', `${p}-worker`);
        await page.goto(`${base}#/queues`);
        await page.fill('input[type=search]', 'odd');
        await page.getByRole('link', { name: odd }).click();
        await shows('#page h1', `^${odd}$`);
        await page.goto(`${base}#/queues/%2F/${jobs}`);
        await shows('main', 'x-max-length');
        await shows('main', `amq\\.direct${p}\\.jobs`);
        await page.click('button:text-is("Peek")');
        await shows('.peeked', 'job 1');
        const bodies = await page.$$eval('.payload', (pre) => pre.map((e) => e.textContent));
        expect(bodies).toEqual(['job 1', 'job 2', 'job 3']);
        await screenshot('queue', true);
        // The peek requeued them.
        const channel = await app.createChannel();
        expect((await channel.checkQueue(jobs)).messageCount).toBe(3);
        await channel.close();
      });

      test('the connections page closes a connection', async () => {
        const closed = new Promise<void>((resolve) => doomed.once('close', () => resolve()));
        await page.click('#nav a[data-page=connections]');
        const button = page.locator(`tr:has-text("${p}-doomed") [data-close]`);
        await button.waitFor({ timeout: WAIT_MS });
        await screenshot('connections');
        page.once('dialog', (dialog) => void dialog.accept());
        await button.click();
        await closed;
        await page
          .locator(`tr:has-text("${p}-doomed")`)
          .waitFor({ state: 'detached', timeout: WAIT_MS });
        await shows('main', `${p}-app`);
      });

      test('no script of the page threw', () => {
        expect(errors).toEqual([]);
      });
    },
  );
}
