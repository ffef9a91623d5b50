/**
 * The Redis chat bus's wire format (chat/redis/channel.ts): an envelope is published as its JSON, and
 * `decode` reads back exactly what an instance publishes while ignoring anything else on the channel.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decode, type Envelope } from '../../src/chat/redis/redis-channel.js';

const AT = '2026-11-22T10:15:30.123456';

const published: [name: string, envelope: Envelope][] = [
  ['a heartbeat', { i: 'instance-a', n: 3 }],
  ['a heartbeat of an empty instance', { i: 'instance-a', n: 0 }],
  ['a hello', { i: 'instance-a', n: 1, h: 1 }],
  ['a goodbye', { i: 'instance-a', n: 0, b: 1 }],
  [
    'a chat message',
    {
      i: 'instance-a',
      n: 2,
      m: { type: 'chat', from: 'c-1', message: 'hello, everyone', timestamp: AT } as Envelope['m'],
    },
  ],
  [
    'a join',
    {
      i: 'instance-a',
      n: 2,
      m: { type: 'user_join', message: 'A user joined', online_count: 2, timestamp: AT } as Envelope['m'],
    },
  ],
  [
    'a join with its member, for its sender to know it back',
    {
      i: 'instance-a',
      n: 2,
      m: { type: 'user_join', message: 'A user joined', online_count: 2, timestamp: AT } as Envelope['m'],
      j: 'c-2',
    },
  ],
  [
    'a leave',
    {
      i: 'instance-a',
      n: 1,
      m: { type: 'user_leave', message: 'A user left', online_count: 1, timestamp: AT } as Envelope['m'],
    },
  ],
  [
    'a message of non-ASCII text',
    {
      i: 'instance-a',
      n: 1,
      m: { type: 'chat', from: 'c-1', message: 'Ünïcødé 😀 \u2028', timestamp: AT } as Envelope['m'],
    },
  ],
];

const ignored: [name: string, text: string][] = [
  ['not JSON', 'not json'],
  ['an empty text', ''],
  ['JSON null', 'null'],
  ['a JSON string', '"hello"'],
  ['a JSON number', '42'],
  ['an array', '[]'],
  ['an object without an instance', '{"n":1}'],
  ['an instance that is not a string', '{"i":7,"n":1}'],
  ['no count', '{"i":"x"}'],
  ['a negative count', '{"i":"x","n":-1}'],
  ['a fractional count', '{"i":"x","n":1.5}'],
  ['a count as a string', '{"i":"x","n":"1"}'],
  ['a count past the safe integers', '{"i":"x","n":9007199254740993}'],
  [
    'a message of a type that is not shared (pong)',
    `{"i":"x","n":1,"m":{"type":"pong","message":"m","timestamp":"${AT}"}}`,
  ],
  [
    'a message of a type that is not shared (system)',
    `{"i":"x","n":1,"m":{"type":"system","message":"m","timestamp":"${AT}"}}`,
  ],
  ['a message without a timestamp', '{"i":"x","n":1,"m":{"type":"chat","message":"m"}}'],
  ['a message whose text is not a string', `{"i":"x","n":1,"m":{"type":"chat","message":5,"timestamp":"${AT}"}}`],
  ['a message that is not an object', '{"i":"x","n":1,"m":"chat"}'],
  ['a message that is null', '{"i":"x","n":1,"m":null}'],
  ['a join whose member is not a string', `{"i":"x","n":1,"j":7}`],
];

describe('the Redis bus codec', () => {
  for (const [name, envelope] of published) {
    test(`${name} reads back as published`, () => {
      assert.deepEqual(decode(JSON.stringify(envelope)), envelope);
    });
  }

  for (const [name, text] of ignored) {
    test(`${name} is not Roster’s: ignored`, () => {
      assert.equal(decode(text), undefined);
    });
  }
});
