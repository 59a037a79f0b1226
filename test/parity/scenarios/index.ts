import type { Scenario } from '../types.js';
import { classicScenarios } from './classic.js';
import { consumerScenarios } from './consumers.js';
import { deadLetterScenarios } from './dead-letter.js';
import { exchangeScenarios } from './exchanges.js';
import { maxLengthScenarios } from './max-length.js';
import { mqliteOnlyScenarios } from './mqlite-only.js';
import { priorityScenarios } from './priority.js';
import { streamScenarios } from './streams.js';

/** Every parity scenario, in the order they run. */
export const scenarios: readonly Scenario[] = [
  ...classicScenarios,
  ...priorityScenarios,
  ...consumerScenarios,
  ...deadLetterScenarios,
  ...maxLengthScenarios,
  ...exchangeScenarios,
  ...streamScenarios,
  ...mqliteOnlyScenarios,
];
