/** `roster migrate`: the pending migrations of DATABASE_URL's store backend, applied ahead of a start (MIGRATE_USAGE). */
import { configuredStore, STANDARD_IO, usageError, type Io } from './io.js';

export const MIGRATE_USAGE = `Usage: roster migrate

Applies the pending database migrations (the numbered SQL files of migrations/, or of
migrations/sqlite/ for a sqlite: URL) to the database named by DATABASE_URL, in one transaction, and
prints each version applied. A SQLite file in use by a running Roster is refused (it migrates itself). Roster applies them at
start-up as well; this runs them ahead, e.g. before a rolling update. Exit status 0 when the schema is
up to date, 1 when the database refused or could not be reached, 2 for a bad setting.`;

export async function migrateCommand(args: string[], io: Io = STANDARD_IO): Promise<number> {
  if (args.length > 0)
    return usageError(io, 'migrate', `takes no arguments (got ${args.join(' ')}); the database is DATABASE_URL`);
  const store = configuredStore(io, 'migrate', process.env);
  if (typeof store === 'number') return store;
  const { storage, backend } = store;
  if (!backend.migrate)
    return usageError(
      io,
      'migrate',
      'needs DATABASE_URL (a postgres:// or sqlite: URL) to know which database to migrate',
    );
  try {
    const { applied, latest } = await backend.migrate(storage);
    for (const version of applied) io.output.write(`applied ${version}\n`);
    io.output.write(`the schema is up to date (${latest ?? 'no migrations'})\n`);
    return 0;
  } catch (error) {
    io.errors.write(`roster migrate: ${describe(error)}\n`);
    return 1;
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const message =
    error.message || (error instanceof AggregateError ? error.errors.map((e: Error) => e.message).join('; ') : '');
  return typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message;
}
