/**
 * The chat's per-client message budget (chat/message-budget.ts) on a fake clock: a token bucket of
 * `max` messages refilled at `max` per window; past it a message is dropped (the first drop of a window
 * is told), and twice the limit dropped within one window closes the sender.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MessageBudget } from '../../src/chat/message-budget.js';

type Step =
  | [op: 'take', now: number, expected: 'ok' | 'notify' | 'drop' | 'close']
  | [op: 'rested', now: number, expected: boolean];

const T = 1_000_000; // an arbitrary start on the fake clock

/** `n` takes at the instant `now`, all expecting `expected`. */
const takes = (n: number, now: number, expected: 'ok' | 'notify' | 'drop' | 'close'): Step[] =>
  Array.from({ length: n }, () => ['take', now, expected] as Step);

const cases: { name: string; max: number; windowMs: number; steps: Step[] }[] = [
  {
    name: 'a burst up to the limit passes; the next is dropped and told once; the rest are dropped silently',
    max: 3,
    windowMs: 1000,
    steps: [...takes(3, T, 'ok'), ['take', T, 'notify'], ...takes(4, T, 'drop')],
  },
  {
    name: 'twice the limit dropped within one window (three times the limit sent) closes the sender',
    max: 3,
    windowMs: 1000,
    steps: [...takes(3, T, 'ok'), ['take', T, 'notify'], ...takes(4, T, 'drop'), ['take', T, 'close']],
  },
  {
    name: 'a limit of one: the second message at once is told, the third closes',
    max: 1,
    windowMs: 1000,
    steps: [
      ['take', T, 'ok'],
      ['take', T, 'notify'],
      ['take', T, 'close'],
    ],
  },
  {
    name: 'tokens come back in proportion to the time elapsed, never beyond the limit',
    max: 4,
    windowMs: 1000,
    steps: [
      ...takes(4, T, 'ok'),
      ['take', T + 125, 'notify'], // half a token: not yet
      ['take', T + 500, 'ok'], // 0.5 + 1.5: two tokens; one taken
      ['take', T + 500, 'ok'],
      ['take', T + 500, 'drop'],
      ['take', T + 100_000, 'ok'], // a long pause refills to the limit, not past it
      ...takes(3, T + 100_000, 'ok'),
      ['take', T + 100_000, 'notify'],
    ],
  },
  {
    name: 'a steady sender at exactly the limit is never dropped',
    max: 5,
    windowMs: 1000,
    steps: Array.from({ length: 50 }, (_, i) => ['take', T + i * 200, 'ok'] as Step),
  },
  {
    name: 'the drop count starts again in a new window: told again, and not closed for the old window’s drops',
    max: 2,
    windowMs: 1000,
    steps: [
      ...takes(2, T, 'ok'),
      ['take', T, 'notify'],
      ['take', T, 'drop'],
      ['take', T, 'drop'], // 3 of the 4 that would close
      ['take', T + 1000, 'ok'], // two tokens back after a whole window
      ['take', T + 1000, 'ok'],
      ['take', T + 1000, 'notify'], // a new window: told again
      ...takes(2, T + 1000, 'drop'),
      ['take', T + 1000, 'close'], // the new window's fourth drop
    ],
  },
  {
    name: 'rested: a new budget is; one that was used is not, until it is full and its drop window is over',
    max: 2,
    windowMs: 1000,
    steps: [
      ['rested', T, true],
      ['take', T, 'ok'],
      ['rested', T, false],
      ['rested', T + 499, false], // 1.998 tokens
      ['rested', T + 500, true],
      ['take', T + 500, 'ok'],
      ['take', T + 500, 'ok'],
      ['take', T + 750, 'notify'], // half a token; a drop window starts at T + 750
      ['rested', T + 1500, false], // full again (0.5 + 1.5), but the drop window is not over
      ['rested', T + 1749, false],
      ['rested', T + 1750, true],
    ],
  },
];

describe('MessageBudget', () => {
  for (const { name, max, windowMs, steps } of cases) {
    test(name, () => {
      const budget = new MessageBudget({ max, windowMs });
      steps.forEach(([op, now, expected], index) => {
        const actual = op === 'take' ? budget.take(now) : budget.rested(now);
        assert.equal(actual, expected, `step ${index}: ${op}(${now - T})`);
      });
    });
  }

  test('the limit it was made with is kept', () => {
    const budget = new MessageBudget({ max: 7, windowMs: 60_000 });
    assert.equal(budget.max, 7);
    assert.equal(budget.windowMs, 60_000);
  });
});
