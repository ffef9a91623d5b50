/**
 * `npm run bench:explain`: the plans of the list and search statements Roster's PostgreSQL store sends
 * for the bench's list scenarios, as `EXPLAIN (ANALYZE, BUFFERS)`, on a schema of its own filled with
 * the bench's users (100 000 unless `--users N`), dropped afterwards. Needs DATABASE_URL.
 *
 * The statements are the store's own: a real PostgresUserStore answers each list while the pool's
 * `query` is watched, and each statement it sent is explained with the same values. A statement the
 * store prepares (a name) is explained as it runs after a few executions: PREPAREd, executed six times
 * (PostgreSQL may then switch to a generic plan), then EXPLAIN EXECUTE. Prints Markdown.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { PostgresUserStore } from '../src/users/stores/postgres/postgres-store.js';
import type { ListParams } from '../src/users/query.js';
import { freshSchema } from '../test/support/postgres.js';
import { fillUsers } from './postgres.js';
import { SEARCH_TERM } from './users.js';

const { values: flags } = parseArgs({ options: { users: { type: 'string', default: '100000' } } });
const users = Number(flags.users);
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl || databaseUrl.startsWith('sqlite:')) throw new Error('bench:explain needs DATABASE_URL (PostgreSQL)');

const page = { offset: 0, limit: 20, sort: 'created_at', descending: true } satisfies ListParams;
const SCENARIOS: readonly [label: string, params: ListParams][] = [
  ['list, default page', page],
  ['list ?role=admin', { ...page, role: 'admin' }],
  ['list ?sort=name&order=asc', { ...page, sort: 'name', descending: false }],
  [`list ?search=${SEARCH_TERM}, first time (counts the matches)`, { ...page, search: SEARCH_TERM }],
  [`list ?search=${SEARCH_TERM}, again (the total kept, no change since)`, { ...page, search: SEARCH_TERM }],
];

/** The statements the store sends, as it sends them. */
const sent: pg.QueryConfig[] = [];
const query = pg.Pool.prototype.query;
pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
  const config = args[0];
  if (typeof config === 'object' && config !== null) sent.push(config as pg.QueryConfig);
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

const schema = await freshSchema({ databaseUrl, prefix: 'bench_explain_' });
try {
  await fillUsers(schema.url, users);
  const store = await PostgresUserStore.open({ url: schema.url, poolSize: 1 }, pino({ level: 'silent' }));
  const explainer = new pg.Client({ connectionString: schema.url });
  await explainer.connect();
  try {
    console.log(
      `Plans at ${users} users (\`npm run bench:explain${flags.users === '100000' ? '' : ` -- --users ${users}`}\`):\n`,
    );
    for (const [label, params] of SCENARIOS) {
      sent.length = 0;
      await store.list(params);
      const statement = sent.find((config) => /FROM users/.test(config.text));
      if (!statement) throw new Error(`no statement seen for ${label}`);
      const values = statement.values ?? [];
      // EXPLAIN takes no bound values: they go in as literals (what a custom plan sees anyway).
      const literals = values.map((value) =>
        value === null ? 'NULL' : typeof value === 'number' ? String(value) : explainer.escapeLiteral(String(value)),
      );
      let plan: pg.QueryResult<{ 'QUERY PLAN': string }>;
      if (statement.name) {
        const execute = `EXECUTE explained(${literals.join(', ')})`;
        await explainer.query(`PREPARE explained AS ${statement.text}`);
        for (let run = 0; run < 6; run++) await explainer.query(execute);
        plan = await explainer.query(`EXPLAIN (ANALYZE, BUFFERS) ${execute}`);
        await explainer.query('DEALLOCATE explained');
      } else {
        const text = statement.text.replace(/\$(\d+)/g, (_, index: string) => literals[Number(index) - 1]!);
        plan = await explainer.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`);
      }
      console.log(`#### ${label}\n`);
      console.log(
        `${statement.name ? 'Prepared (named) statement' : 'Unnamed statement, planned for its values'}; values ${JSON.stringify(values)}:\n`,
      );
      console.log('```sql');
      console.log(statement.text.replace(/\n\s+/g, '\n  '));
      console.log('```\n');
      console.log('```');
      console.log(plan.rows.map((row) => row['QUERY PLAN']).join('\n'));
      console.log('```\n');
    }
  } finally {
    await explainer.end();
    await store.close();
  }
} finally {
  await schema.drop();
}
