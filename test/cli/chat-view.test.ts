/**
 * Units of what the terminal chat client shows: reading server messages defensively, one line per
 * message for a person, the clock, terminal-safe text, and telling the client's own chats apart.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  commandOf,
  describeClose,
  formatClock,
  formatPong,
  formatServerMessage,
  formatUnknown,
  OwnChats,
  printable,
  worthReconnecting,
} from '../../src/cli/chat-view.js';
import { backoffDelay, DEFAULT_BACKOFF } from '../../src/protocol/backoff.js';
import { decodeServerMessage as parseServerMessage } from '../../src/protocol/chat-codec.js';
import { shortId } from '../../src/protocol/sender-id.js';

const TS = '2026-11-22T10:15:30.123456';
const ID = '3f2a9c1b-0d4e-4f5a-8b6c-7d8e9f0a1b2c';

describe('parseServerMessage', () => {
  test('reads each message type of the contract', () => {
    assert.deepEqual(
      parseServerMessage(`{"type":"system","message":"Welcome to the chat! 2 users online.","timestamp":"${TS}"}`),
      {
        type: 'system',
        message: 'Welcome to the chat! 2 users online.',
        timestamp: TS,
      },
    );
    assert.deepEqual(
      parseServerMessage(
        `{"type":"user_join","message":"A user joined the chat","online_count":2,"timestamp":"${TS}"}`,
      ),
      {
        type: 'user_join',
        message: 'A user joined the chat',
        online_count: 2,
        timestamp: TS,
      },
    );
    assert.deepEqual(
      parseServerMessage(`{"type":"user_leave","message":"A user left the chat","online_count":1,"timestamp":"${TS}"}`),
      {
        type: 'user_leave',
        message: 'A user left the chat',
        online_count: 1,
        timestamp: TS,
      },
    );
    assert.deepEqual(parseServerMessage(`{"type":"chat","from":"${ID}","message":"hi","timestamp":"${TS}"}`), {
      type: 'chat',
      from: ID,
      message: 'hi',
      timestamp: TS,
    });
    assert.deepEqual(parseServerMessage(`{"type":"pong","timestamp":"${TS}"}`), { type: 'pong', timestamp: TS });
  });

  test('a missing timestamp reads as empty; extra fields are dropped', () => {
    assert.deepEqual(parseServerMessage('{"type":"chat","from":"a","message":"m","extra":1}'), {
      type: 'chat',
      from: 'a',
      message: 'm',
      timestamp: '',
    });
  });

  test('anything else is not understood', () => {
    for (const text of [
      'not json',
      '[]',
      'null',
      '"chat"',
      '{}',
      '{"type":"shout","message":"x"}',
      '{"type":"chat","message":"no sender"}',
      '{"type":"chat","from":"a","message":42}',
      '{"type":"user_join","message":"A user joined the chat"}',
      '{"type":"system"}',
    ]) {
      assert.equal(parseServerMessage(text), undefined, text);
    }
  });
});

describe('formatServerMessage', () => {
  const utc = { timeZone: 'UTC' };

  test('notices', () => {
    assert.equal(
      formatServerMessage({ type: 'system', message: 'Welcome to the chat! 2 users online.', timestamp: TS }),
      '* Welcome to the chat! 2 users online.',
    );
    assert.equal(
      formatServerMessage({ type: 'user_join', message: 'A user joined the chat', online_count: 3, timestamp: TS }),
      '* a user joined (3 online)',
    );
    assert.equal(
      formatServerMessage({ type: 'user_leave', message: 'A user left the chat', online_count: 1, timestamp: TS }),
      '* a user left (1 online)',
    );
  });

  test('a chat: clock, short sender id, text; the client own ones marked (you)', () => {
    const chat = { type: 'chat', from: ID, message: 'hello there', timestamp: TS } as const;
    assert.equal(formatServerMessage(chat, utc), '[10:15:30] 3f2a9c1b: hello there');
    assert.equal(formatServerMessage(chat, { ...utc, mine: true }), '[10:15:30] 3f2a9c1b (you): hello there');
    assert.equal(formatServerMessage(chat, { timeZone: 'Asia/Kolkata' }), '[15:45:30] 3f2a9c1b: hello there');
    assert.equal(formatServerMessage({ ...chat, message: '' }, utc), '[10:15:30] 3f2a9c1b: ');
  });

  test('control characters in a chat cannot reach the terminal', () => {
    const line = formatServerMessage({ type: 'chat', from: ID, message: 'a\nb\x1b[2Jc\rd\te', timestamp: TS }, utc);
    assert.equal(line, '[10:15:30] 3f2a9c1b: a\\x0ab\\x1b[2Jc\\x0dd\te');
  });

  test('a pong has no line of its own', () => {
    assert.equal(formatServerMessage({ type: 'pong', timestamp: TS }), undefined);
  });

  test('the other lines', () => {
    assert.equal(formatPong(3.4), '* pong in 3 ms');
    assert.equal(formatPong(-0.1), '* pong in 0 ms');
    assert.equal(formatUnknown('{"type":"shout"}'), '* (unrecognised message) {"type":"shout"}');
    assert.equal(formatUnknown('bell\x07'), '* (unrecognised message) bell\\x07');
  });
});

describe('formatClock, shortId, printable', () => {
  test('a timestamp without an offset is UTC (the contract); one with an offset is honoured', () => {
    assert.equal(formatClock('2026-11-22T00:05:09.000001', 'UTC'), '00:05:09');
    assert.equal(formatClock('2026-11-22T23:59:59', 'UTC'), '23:59:59');
    assert.equal(formatClock('2026-11-22T10:15:30Z', 'UTC'), '10:15:30');
    assert.equal(formatClock('2026-11-22T10:15:30+02:00', 'UTC'), '08:15:30');
    assert.equal(formatClock('2026-11-22T10:15:30.5', 'America/New_York'), '05:15:30');
  });

  test('an unreadable timestamp shows as --:--:--', () => {
    for (const timestamp of ['', 'soon', '10:15:30', '2026-13-45T99:99:99'])
      assert.equal(formatClock(timestamp, 'UTC'), '--:--:--', timestamp);
  });

  test('the local time zone by default', () => {
    assert.match(formatClock(TS), /^\d{2}:\d{2}:\d{2}$/);
  });

  test('shortId is the first 8 characters, as in the browser console', () => {
    assert.equal(shortId(ID), '3f2a9c1b');
    assert.equal(shortId('abc'), 'abc');
  });

  test('printable leaves ordinary text, tabs and non-ASCII alone', () => {
    assert.equal(printable('héllo\twörld ✓ 🎉'), 'héllo\twörld ✓ 🎉');
    assert.equal(printable('\x00\x7f\x9b'), '\\x00\\x7f\\x9b');
  });
});

describe('OwnChats: telling the client own chats apart', () => {
  test('the first echo of the oldest sent text gives the client its id; from then on the id decides', () => {
    const own = new OwnChats();
    assert.equal(own.isMine('other', 'hi'), false, 'nothing sent yet: nothing is ours');
    own.sent('one');
    own.sent('two');
    assert.equal(own.pending, 2);
    assert.equal(own.isMine('other', 'two'), false, 'not the oldest pending text');
    assert.equal(own.id, undefined);
    assert.equal(own.isMine('me', 'one'), true);
    assert.equal(own.id, 'me');
    assert.equal(own.pending, 1);
    assert.equal(own.isMine('other', 'two'), false, 'same text, another sender');
    assert.equal(own.isMine('me', 'two'), true);
    assert.equal(own.pending, 0);
    assert.equal(own.isMine('me', 'typed elsewhere?'), true, 'our id, even with nothing pending');
    assert.equal(own.pending, 0);
  });

  test('the same text sent twice counts twice', () => {
    const own = new OwnChats();
    own.sent('again');
    own.sent('again');
    assert.equal(own.isMine('me', 'again'), true);
    assert.equal(own.pending, 1);
    assert.equal(own.isMine('me', 'again'), true);
    assert.equal(own.pending, 0);
  });

  test('the empty text is a text like any other', () => {
    const own = new OwnChats();
    own.sent('');
    assert.equal(own.isMine('me', ''), true);
    assert.equal(own.id, 'me');
  });
});

describe('close codes, reconnection, commands', () => {
  test('describeClose puts every code in words, the reason as sent (made printable)', () => {
    assert.equal(
      describeClose(1006),
      '1006 (the connection dropped without a close frame: the server stopped or the network failed)',
    );
    assert.equal(
      describeClose(1009, 'Message too big'),
      '1009 Message too big (a message was larger than the server accepts, WS_MAX_PAYLOAD on Roster)',
    );
    assert.match(describeClose(4001, 'x\x1b'), /^4001 x\\x1b \(a code of the server's own application\)$/);
    assert.match(describeClose(2999), /an unknown code/);
  });

  test('worthReconnecting: the server went away or was busy, not what the client sent', () => {
    for (const code of [1001, 1006, 1011, 1012, 1013]) assert.equal(worthReconnecting(code), true, String(code));
    for (const code of [1000, 1002, 1003, 1007, 1008, 1009, 4000])
      assert.equal(worthReconnecting(code), false, String(code));
  });

  // The terminal client reconnects through the protocol's session (ReconnectingChat), with its default.
  test("the reconnection delays: the console's backoff, 0.5 s doubling to 10 s, up to half of it jitter", () => {
    const reconnectDelay = (attempt: number, random: () => number) => backoffDelay(attempt, DEFAULT_BACKOFF, random);
    assert.deepEqual(
      [0, 1, 2, 5, 20].map((attempt) => reconnectDelay(attempt, () => 0)),
      [500, 1000, 2000, 10_000, 10_000],
    );
    assert.equal(
      reconnectDelay(0, () => 1),
      250,
    );
  });

  test('commandOf: one /word is a command; a path, text or // is not', () => {
    assert.equal(commandOf(' /Quit '), '/quit');
    assert.equal(commandOf('/nope'), '/nope');
    for (const line of ['/usr/bin is full', '//quit', 'hello', '/', '/1'])
      assert.equal(commandOf(line), undefined, line);
  });
});
