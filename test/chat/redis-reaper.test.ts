/**
 * The reaper (chat/redis/presence.ts and its script) against the real Redis: the leaves it publishes on
 * behalf of a gone instance are the codec's frames, byte for byte, each with the count stepping down;
 * the script writes no frame of its own, only the one it is handed, with the count spliced in.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { leaveNotice } from '../../src/chat/bus.js';
import { decode, type BusLink } from '../../src/chat/redis/redis-channel.js';
import { RedisPresence } from '../../src/chat/redis/redis-presence.js';
import { withScripts, type Scripted } from '../../src/chat/redis/redis-scripts.js';
import { encodeServerMessage } from '../../src/protocol/chat-codec.js';
import { REDIS_URL, WITHOUT_REDIS } from '../support/index.js';

const AT = '2026-11-22T10:15:30.123456';

describe('the reaper', { skip: WITHOUT_REDIS }, () => {
  let pub: Scripted;
  let sub: Redis;
  let link: BusLink;
  const published: string[] = [];

  before(async () => {
    const channel = `roster-test-${randomUUID()}:chat`;
    pub = withScripts(new Redis(REDIS_URL!));
    sub = new Redis(REDIS_URL!);
    sub.on('message', (_channel: string, text: string) => published.push(text));
    await sub.subscribe(channel);
    link = { id: 'reaper', pub, channel, keys: `${channel}:`, send: () => true };
  });
  after(async () => {
    await Promise.all([pub.quit(), sub.quit()]);
  });

  /** A listed instance with no alive key, and its members (seq order: b, then a). */
  async function ghost(id: string): Promise<void> {
    await pub.sadd(`${link.keys}instances`, id);
    await pub.hset(`${link.keys}members:${id}`, 'a', '{"seq":2,"since":"x"}', 'b', '{"seq":1,"since":"x"}');
  }

  async function publications(count: number): Promise<string[]> {
    for (let i = 0; i < 200 && published.length < count; i++) await new Promise((r) => setTimeout(r, 5));
    return published.splice(0, count);
  }

  test("publishes the codec's leave frame for each member, its count stepping down, then goodbye", async () => {
    await ghost('gone');
    assert.equal(await new RedisPresence(link).reap(AT), 2);
    const texts = await publications(3);
    assert.deepEqual(texts, [
      `{"i":"gone","n":1,"r":1,"m":${encodeServerMessage(leaveNotice(1, AT))}}`,
      `{"i":"gone","n":0,"r":1,"m":${encodeServerMessage(leaveNotice(0, AT))}}`,
      '{"i":"gone","n":0,"b":1,"r":1}',
    ]);
    assert.deepEqual(decode(texts[0]!)?.m, leaveNotice(1, AT), 'what the other instances read back');
  });

  test('writes whatever frame it is handed, with the count spliced in', async () => {
    await ghost('other');
    await pub.rosterReap(`${link.keys}instances`, 'reaper', link.channel, link.keys, '{"count":', ',"x":1}');
    const texts = await publications(3);
    assert.deepEqual(texts.slice(0, 2), [
      '{"i":"other","n":1,"r":1,"m":{"count":1,"x":1}}',
      '{"i":"other","n":0,"r":1,"m":{"count":0,"x":1}}',
    ]);
  });
});
