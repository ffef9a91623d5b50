-- The users of Roster in SQLite (DATABASE_URL=sqlite:<file>). Applied at start-up or by `roster migrate`
-- (src/users/sqlite-migrations.ts), in one transaction; never edit a migration once released, add the
-- next number instead.
--
-- id, name, email and role are BLOBs holding the string's UTF-16 code units, big-endian, with the units
-- from U+D800 up shifted as in compareCodePoints (src/users/query.ts; encoding in sqlite-text.ts). So
-- every string a JSON body can carry (U+0000 and lone surrogates included) round-trips exactly, and
-- SQLite's BLOB order (memcmp, then length) is the memory store's code-point order.
-- name_lower and email_lower hold JavaScript's toLowerCase() of them as UTF-8 text, with U+0000, U+0001
-- and lone surrogates escaped as for PostgreSQL (src/users/postgres-text.ts): search runs instr() on
-- them (case-insensitive by JavaScript's rules, which SQLite's lower() and LIKE do not follow).
-- email_key is emailKey() of the email (src/users/store.ts), escaped alike: it decides uniqueness.
-- created_at and updated_at are microseconds since the epoch (UTC), stamped by the store's clock:
-- created_at is strictly increasing, so it is the rowid, and creation order is the table's own order.

CREATE TABLE users (
  created_at  INTEGER PRIMARY KEY,
  id          BLOB NOT NULL,
  name        BLOB NOT NULL,
  email       BLOB NOT NULL,
  role        BLOB NOT NULL,
  updated_at  INTEGER NOT NULL,
  name_lower  TEXT NOT NULL,
  email_lower TEXT NOT NULL,
  email_key   TEXT NOT NULL
);

CREATE UNIQUE INDEX users_id ON users (id);
CREATE INDEX users_email_key ON users (email_key);
-- One index per sort field and direction: each entry ends with the rowid (created_at), ascending, so
-- ties keep creation order in both directions without a sort. updated_at is unique: one index serves both.
CREATE INDEX users_updated_at ON users (updated_at);
CREATE INDEX users_role ON users (role);
CREATE INDEX users_role_desc ON users (role DESC);
CREATE INDEX users_name ON users (name);
CREATE INDEX users_name_desc ON users (name DESC);
CREATE INDEX users_email ON users (email);
CREATE INDEX users_email_desc ON users (email DESC);
