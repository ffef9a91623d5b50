/** Users in PostgreSQL (`DATABASE_URL=postgres://…`), shared by every instance on the database. */
import { EngineFaults } from '../../../ops/engine-faults.js';
import { keyBoundsOf, type StoreBackend } from '../backend.js';

const SCHEMES = /^postgres(ql)?:\/\//i;

export const postgresBackend: StoreBackend = {
  name: 'postgres',
  accepts: (url) => url !== undefined && SCHEMES.test(url),
  note: () => 'Users are kept in PostgreSQL (DATABASE_URL)',
  async open(storage, deps) {
    // Loaded here, not at the top: only a process on PostgreSQL carries pg.
    const { PostgresUserStore } = await import('./postgres-store.js');
    const store = await PostgresUserStore.open(
      {
        url: storage.url!,
        poolSize: storage.poolSize,
        keyBounds: keyBoundsOf(storage),
        changeBounds: storage.changeBounds,
      },
      deps.logger,
      deps.faults ?? new EngineFaults(deps.logger),
    );
    return { store, health: store.health };
  },
  async migrate(storage) {
    const [{ createPool }, { migrate, readPostgresMigrations }] = await Promise.all([
      import('./postgres-connection.js'),
      import('./postgres-migrations.js'),
    ]);
    const pool = createPool({ url: storage.url!, poolSize: storage.poolSize }, new EngineFaults());
    try {
      const migrations = await readPostgresMigrations();
      return { applied: await migrate(pool, migrations), latest: migrations.at(-1)?.version };
    } finally {
      await pool.end().catch(() => undefined);
    }
  },
};
