-- migrate: concurrently
--
-- Indexes that make any page of any list order a walk of one index (src/users/stores/postgres/list.ts),
-- built without locking writes out (CREATE INDEX CONCURRENTLY; the runner, migrations.ts, applies this
-- file outside a transaction, one statement at a time, and rebuilds an index a crash left INVALID).
--
-- A list orders by the field, then creation order (created_at, seq) ascending in both directions, so
-- a descending sort is (field DESC, created_at, seq): no scan of the ascending index gives that order,
-- and PostgreSQL sorted the whole table for it. Each index also serves the reversed order, scanned
-- backwards, which list.ts walks for a page in the far half. id and created_at are unique: their
-- indexes serve both directions already, as users_role_desc does for role.
--
-- With a role filter, the (role, field, …) indexes hold only that role's users in the list's order,
-- so a page skips only users of that role; (role, created_at, seq) is users_role.
--
-- Each new index costs every insert one more entry, and every update of its columns (updated_at
-- changes on every update) another.

CREATE INDEX CONCURRENTLY IF NOT EXISTS users_name_desc ON users (name DESC, created_at, seq);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_email_desc ON users (email DESC, created_at, seq);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_updated_at_desc ON users (updated_at DESC, created_at, seq);

CREATE INDEX CONCURRENTLY IF NOT EXISTS users_role_id ON users (role, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_role_name ON users (role, name, created_at, seq);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_role_name_desc ON users (role, name DESC, created_at, seq);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_role_email ON users (role, email, created_at, seq);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_role_email_desc ON users (role, email DESC, created_at, seq);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_role_updated_at ON users (role, updated_at, created_at, seq);
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_role_updated_at_desc ON users (role, updated_at DESC, created_at, seq);
