// One broker for the whole run: globalSetup starts it and puts its URL in AMQP_URL.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    globalSetup: ['./global-setup.ts'],
  },
});
