-- Writes no longer index their user's text for search in their own transaction: they note the user in
-- users_search_pending, and the store indexes the noted users in one transaction later
-- (src/users/stores/sqlite/sqlite-store.ts: #indexSearches), on a short timer after writes and before
-- any search reads the index, so every search still sees every write.
--
-- Why: FTS5 writes a segment of its own at every commit (and merges the segments as they pile up), so
-- the triggers of migration 004 made a single create write about 26 pages instead of 17, and halved the
-- creates per second at 1 000 000 users. Noting the user is one row of a small table; indexing a batch
-- of users writes one segment for all of them.
--
-- A noted user keeps the text as the index holds it (indexed 1), so that it can be taken out of the
-- index ('delete' of an external-content table needs that text); indexed 0: a user created since, not
-- in the index. Only the first change after the last indexing is noted (INSERT OR IGNORE): that row
-- holds what the index still holds. The note is written in the write's own transaction, so a crash
-- loses no note; the store indexes what is noted when it opens the file.

CREATE TABLE users_search_pending (
  rowid       INTEGER PRIMARY KEY,
  indexed     INTEGER NOT NULL,
  name_lower  TEXT,
  email_lower TEXT
);

DROP TRIGGER users_search_insert;
DROP TRIGGER users_search_delete;
DROP TRIGGER users_search_update;

CREATE TRIGGER users_search_insert AFTER INSERT ON users BEGIN
  INSERT OR IGNORE INTO users_search_pending (rowid, indexed) VALUES (new.created_at, 0);
END;

CREATE TRIGGER users_search_delete AFTER DELETE ON users BEGIN
  INSERT OR IGNORE INTO users_search_pending (rowid, indexed, name_lower, email_lower)
    VALUES (old.created_at, 1, old.name_lower, old.email_lower);
END;

CREATE TRIGGER users_search_update AFTER UPDATE OF name_lower, email_lower ON users
  WHEN old.name_lower IS NOT new.name_lower OR old.email_lower IS NOT new.email_lower
BEGIN
  INSERT OR IGNORE INTO users_search_pending (rowid, indexed, name_lower, email_lower)
    VALUES (old.created_at, 1, old.name_lower, old.email_lower);
END;
