/**
 * The server side of Roster's PostgreSQL connections ended under load (`pg_terminate_backend`, as a
 * restart or failover does): the process stays up, every reply is a 2xx, a 4xx or a 503 envelope, and
 * every write acknowledged with 2xx is in the database afterwards. Email-changing updates run in a
 * transaction, so terminations land between two statements of a checked-out client too: the case that
 * once ended the process with an unhandled 'error' event.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import {
  DATABASE_URL,
  freshSchema,
  Instance,
  NO_DATABASE,
  request,
  urlWithSchema,
  type JsonResponse,
} from '../support/index.js';

const TERMINATIONS = 200;
const CLIENTS = 4;

type State = { name: string; email: string; role: string };

/** A reply under terminations: success, a client error, or 503 in the envelope; nothing else. */
function assertAcceptable(response: JsonResponse, what: string): void {
  if (response.status >= 200 && response.status < 300) return;
  assert.ok(
    response.status === 503 || (response.status >= 400 && response.status < 500),
    `${what}: ${response.status} ${response.text}`,
  );
  assert.equal(response.body?.status, 'error', `${what}: ${response.text}`);
  if (response.status === 503) assert.equal(response.body.error.code, 'SERVICE_UNAVAILABLE', what);
}

describe(
  'PostgreSQL connections terminated by the server under load',
  { skip: DATABASE_URL ? false : NO_DATABASE },
  () => {
    test(
      `${TERMINATIONS} rounds of pg_terminate_backend: the process survives and loses no acknowledged write`,
      { timeout: 180_000 },
      async (t) => {
        const schema = await freshSchema();
        t.after(() => schema.drop());
        // An application name of this test's own, so the terminations reach this Roster's connections only.
        const applicationName = `roster-terminate-${randomBytes(4).toString('hex')}`;
        const roster = await Instance.start(t, {
          DATABASE_URL: urlWithSchema(DATABASE_URL!, schema.name, { application_name: applicationName }),
          DATABASE_POOL_SIZE: '6',
        });
        // Each user is written by one client only, in order: its last acknowledged state is known, and the
        // states of writes whose reply was lost (503 after a commit) are the only other candidates.
        const users = new Map<string, { acked: State; since: State[] }>();
        let stop = false;
        let replies = 0;

        const worker = async (client: number) => {
          const own: string[] = [];
          for (let i = 0; !stop; i++) {
            const email = `w${client}.${i}.${randomUUID()}@example.com`;
            const step = i % 4;
            if (step === 0 || own.length === 0) {
              const state = { name: `Worker ${client} ${i}`, email, role: 'user' };
              const response = await request(`${roster.api}/users`, { method: 'POST', body: state });
              replies++;
              assertAcceptable(response, 'create');
              if (response.status === 201) {
                own.push(response.body.data.id);
                users.set(response.body.data.id, { acked: state, since: [] });
              }
              continue;
            }
            const id = own[i % own.length]!;
            const entry = users.get(id)!;
            const next: State =
              step === 1
                ? { ...entry.acked, email }
                : step === 2
                  ? { name: `Put ${client} ${i}`, email, role: 'admin' }
                  : { ...entry.acked };
            entry.since.push(next);
            const response =
              step === 1
                ? await request(`${roster.api}/users/${id}`, { method: 'PATCH', body: { email } })
                : step === 2
                  ? await request(`${roster.api}/users/${id}`, { method: 'PUT', body: next })
                  : await request(`${roster.api}/users/${id}`);
            replies++;
            assertAcceptable(response, ['', 'patch', 'put', 'get'][step]!);
            if (response.status === 200 && step !== 3) users.set(id, { acked: next, since: [] });
            if (step === 3 && i % 8 === 3)
              assertAcceptable(await request(`${roster.api}/users?search=worker&limit=5`), 'list');
          }
        };

        const admin = new pg.Client({ connectionString: DATABASE_URL });
        await admin.connect();
        t.after(() => admin.end());
        let terminated = 0;
        const killer = async () => {
          for (let round = 0; round < TERMINATIONS; round++) {
            const { rows } = await admin.query(
              'SELECT count(*) AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) t',
              [applicationName],
            );
            terminated += Number(rows[0].n);
            await delay(20 + (round % 5) * 10);
          }
          stop = true;
        };

        await Promise.all([killer(), ...Array.from({ length: CLIENTS }, (_, n) => worker(n))]);
        assert.ok(terminated >= TERMINATIONS, `only ${terminated} connections were terminated`);
        assert.equal(roster.child.exitCode, null, 'the Roster process exited');
        assert.equal(roster.child.signalCode, null, 'the Roster process was killed');
        assert.ok(replies > 100, `only ${replies} replies under load`);

        // Recovered: health up again, and every acknowledged write readable.
        for (let i = 0; ; i++) {
          const health = await request(`${roster.api}/health`);
          if (health.status === 200) break;
          assert.ok(i < 100, `health did not recover: ${health.text}`);
          await delay(100);
        }
        for (const [id, { acked, since }] of users) {
          const response = await request(`${roster.api}/users/${id}`);
          assert.equal(response.status, 200, `acknowledged user ${id}: ${response.text}`);
          const stored = {
            name: response.body.data.name,
            email: response.body.data.email,
            role: response.body.data.role,
          };
          const candidates = [acked, ...since];
          assert.ok(
            candidates.some(
              (state) => state.name === stored.name && state.email === stored.email && state.role === stored.role,
            ),
            `user ${id} holds ${JSON.stringify(stored)}, not its acknowledged ${JSON.stringify(acked)}`,
          );
        }
        // The errors were heard and counted, not thrown.
        const metrics = await fetch(`${roster.api.replace('/api/v1', '')}/metrics`).then((r) => r.text());
        assert.match(metrics, /roster_engine_errors_total\{engine="database"\} [1-9]/);
        t.diagnostic(
          `${terminated} connections terminated over ${TERMINATIONS} rounds; ${replies} replies; ${users.size} users checked`,
        );
      },
    );
  },
);
