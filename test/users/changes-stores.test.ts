/**
 * The change log on every store (memory, SQLite, PostgreSQL), through the feed over real sockets: every
 * write appears once, in order; a stream cut at random moments during a write storm and resumed from
 * its last id receives, in union, exactly the log, nothing twice; retention leads to a reset.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  allChanges,
  cutAndResume,
  epochOf,
  eventually,
  request,
  SseClient,
  startOn,
  storm,
  TEST_STORES,
  type FeedChange,
  type Running,
} from '../support/index.js';

const FEED = '/users/changes';

for (const store of TEST_STORES) {
  describe(`change log on the ${store.name} store`, { skip: store.skip }, () => {
    test('its epoch is lower-case hex: a cursor never starts with a dash, which a command line takes for an option', async (t) => {
      const running: Running = await startOn(store);
      t.after(() => running.stop());
      // `roster users watch --since -Xy….7` is refused as a usage error (exit 2): a base64url epoch
      // began with a dash one start in 64.
      assert.match(await epochOf(running.api), /^[0-9a-f]{12}$/);
    });

    test('every write appears once, in order, with consecutive numbers', async (t) => {
      const running: Running = await startOn(store);
      t.after(() => running.stop());
      const epoch = await epochOf(running.api);
      await storm(running.api, 80, 6);
      const changes = await allChanges(running.api, `${epoch}.0`);
      assert.equal(changes.length, 3 + 80);
      assert.deepEqual(
        changes.map((change) => change.seq),
        changes.map((_, index) => index + 1),
      );
      // Per user: created first, deleted last, and nothing after a delete.
      const byUser = new Map<string, FeedChange[]>();
      for (const change of changes) byUser.set(change.id, [...(byUser.get(change.id) ?? []), change]);
      for (const [, own] of byUser) {
        assert.equal(own[0]!.type, 'created');
        assert.ok(own.slice(0, -1).every((change) => change.type !== 'deleted'));
      }
    });

    test('a stream cut 100 times during a write storm and resumed: the log, nothing twice', async (t) => {
      const running: Running = await startOn(store);
      t.after(() => running.stop());
      const epoch = await epochOf(running.api);
      const writes = storm(running.api, 400, 4);
      const seen = await cutAndResume([running.api], writes, 100, `${epoch}.0`, 3 + 400);
      const log = await allChanges(running.api, `${epoch}.0`);
      assert.deepEqual(
        seen.map((change) => change.seq),
        log.map((change) => change.seq),
      );
    });

    test('past CHANGES_MAX, an old cursor gets a reset naming the head', async (t) => {
      const running: Running = await startOn(store, { CHANGES_MAX: '4' });
      t.after(() => running.stop());
      const epoch = await epochOf(running.api);
      await storm(running.api, 8, 1);
      // On PostgreSQL the last change is numbered just after its write's reply.
      const head = await eventually(async () => {
        const next: string = (await request(`${running.api}${FEED}`)).body.next;
        return next === `${epoch}.11` && next;
      }, 'the head at 11');
      const { status, headers } = await request(`${running.api}${FEED}?since=${epoch}.1`);
      assert.deepEqual([status, headers.get('roster-changes-cursor')], [410, head]);
      const stream = await SseClient.open(`${running.api}${FEED}`, { 'last-event-id': `${epoch}.1` });
      await stream.waitFor(1);
      stream.cut();
      assert.deepEqual([stream.events[0]!.event, stream.events[0]!.id], ['reset', head]);
    });

    test('past CHANGES_MAX_AGE_SECONDS, changes leave the log and an old cursor gets a reset', async (t) => {
      const running: Running = await startOn(store, { CHANGES_MAX_AGE_SECONDS: '1' });
      t.after(() => running.stop());
      const epoch = await epochOf(running.api);
      await storm(running.api, 4, 1);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // A write trims what is past the age (on PostgreSQL, the session that numbers the changes does).
      await storm(running.api, 1, 1, 'late');
      const { status, headers } = await eventually(async () => {
        const reply = await request(`${running.api}${FEED}?since=${epoch}.1`);
        return reply.status === 410 && reply;
      }, 'the aged changes to be trimmed');
      assert.match(headers.get('roster-changes-cursor') ?? '', new RegExp(`^${epoch}\\.\\d+$`));
      assert.equal(status, 410);
      // From the cursor it names, nothing but the young write (which a timer's trim may precede).
      const young = await allChanges(running.api, headers.get('roster-changes-cursor')!);
      assert.ok(
        young.every((change) => change.user?.name === 'late0'),
        JSON.stringify(young),
      );
      const from = (await request(`${running.api}${FEED}?since=${epoch}.${3 + 4}`)).status;
      assert.equal(from, 200, 'a cursor at the last aged change still resumes without a gap');
    });
  });
}
