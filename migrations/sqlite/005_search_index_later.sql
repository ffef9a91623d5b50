-- Writes no longer index their user's text for search in their own transaction: the store indexes
-- every user written since the last time in one transaction (src/users/stores/sqlite/search-index.ts:
-- SearchIndex), on a short timer after writes and before any search reads the index, so every
-- search still sees every write.
--
-- Why: FTS5 writes a segment of its own at every commit (and merges the segments as they pile up), so
-- the triggers of migration 004 made a single create write about 26 pages instead of 17, and halved the
-- creates per second at 1 000 000 users; a batch of users indexed at once shares one segment.
-- Measured at 1 000 000 users, one write at a time, each in its own transaction (pages written to the
-- WAL per write, indexing included; load average about 4 on 2 cores, so the rates are rough):
--   schema of                 create: pages  per second    name patch: pages  per second
--   001 (ba086fa)                     14.5        1 330                 12.4        1 320
--   003                               17.0        1 340                 12.4        1 250
--   003 + 004 (triggers)              24.6        1 150                 16.4        1 350
--   003 + 004 + this                  18.6        1 350                  5.3        3 000
-- (the last line with the patch's UPDATE SETting only the changed columns, rows.ts: toUpdate; 004 with
-- that UPDATE: 10.5 pages). The stores themselves (ba086fa's against this one, one write at a time, a
-- macrotask between writes so that the indexing timer runs; load 1 to 5): patches 1.3 to 1.8 times
-- ba086fa's rate; creates 0.83 to 1.27 times, 0.83 once searches and a PATCH-then-search phase had
-- left the index in many small segments. Through HTTP (bench lists section, 1 000 000 users, under
-- other load): creates 0.77x, patches 0.71x of ba086fa, where the build before this was at 0.46x and
-- 0.64x on a quiet machine. On a quiet machine (load 1) the stores gave creates 0.78x, patches 1.23x
-- of ba086fa; with the indexing switched off 0.83x and 2.3x: what creates still lose is mostly the
-- wider and added indexes of 003 that the pages need, then this batched indexing. The other options were measured too, and dropped: detail=none or column
-- (FTS5 then refuses phrase queries, so every hit must be confirmed, and the pages per write stay
-- about 26), a contentless table (about 25 pages, 32 with detail=full), automerge 16 (within noise).
--
-- Creation stamps only grow (the store's clock), so the users created since the last indexing are the
-- ones above users_search_state.indexed_up_to: a create writes nothing more. A user the index holds
-- that is changed or deleted is noted in users_search_pending with its text as the index holds it
-- ('delete' of an external-content table needs that text), by the first change since the last
-- indexing only (INSERT OR IGNORE), in the write's own transaction: a crash loses no note, and the
-- store indexes what waits when it next searches (or shortly after it opens the file).

CREATE TABLE users_search_state (
  only_row      INTEGER PRIMARY KEY CHECK (only_row = 1),
  indexed_up_to INTEGER NOT NULL
);
INSERT INTO users_search_state (only_row, indexed_up_to) VALUES (1, coalesce((SELECT max(created_at) FROM users), 0));

CREATE TABLE users_search_pending (
  rowid       INTEGER PRIMARY KEY,
  name_lower  TEXT,
  email_lower TEXT
);

DROP TRIGGER users_search_insert;
DROP TRIGGER users_search_delete;
DROP TRIGGER users_search_update;

CREATE TRIGGER users_search_delete AFTER DELETE ON users
  WHEN old.created_at <= (SELECT indexed_up_to FROM users_search_state)
BEGIN
  INSERT OR IGNORE INTO users_search_pending (rowid, name_lower, email_lower)
    VALUES (old.created_at, old.name_lower, old.email_lower);
END;

CREATE TRIGGER users_search_update AFTER UPDATE OF name_lower, email_lower ON users
  WHEN (old.name_lower IS NOT new.name_lower OR old.email_lower IS NOT new.email_lower)
    AND old.created_at <= (SELECT indexed_up_to FROM users_search_state)
BEGIN
  INSERT OR IGNORE INTO users_search_pending (rowid, name_lower, email_lower)
    VALUES (old.created_at, old.name_lower, old.email_lower);
END;
