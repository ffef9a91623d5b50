-- Search without reading every user: an FTS5 index of the trigrams (every run of three characters) of
-- name_lower and email_lower, whose rowid is the user's (created_at). A needle of three characters or
-- more is a phrase of its trigrams, which only a column holding the needle matches, so the index finds
-- the matches and counts them without a scan (src/users/stores/sqlite/search.ts).
--
-- case_sensitive 1: the columns are lower-cased by JavaScript already, and SQLite's own case folding
-- differs from toLowerCase() (it folds U+017F LONG S to s, for one); the index must find exactly the
-- stored text. The index keeps no copy of the text (content='users': it reads the users table when it
-- needs the text), only the trigrams.
--
-- The triggers keep it in step with users in the same transaction as every write; an update reindexes
-- only a user whose searched text changed. The 'rebuild' below indexes the users already in the file,
-- at the start-up that applies this migration.

CREATE VIRTUAL TABLE users_search USING fts5 (
  name_lower,
  email_lower,
  content = 'users',
  content_rowid = 'created_at',
  tokenize = 'trigram case_sensitive 1'
);

CREATE TRIGGER users_search_insert AFTER INSERT ON users BEGIN
  INSERT INTO users_search (rowid, name_lower, email_lower) VALUES (new.created_at, new.name_lower, new.email_lower);
END;

CREATE TRIGGER users_search_delete AFTER DELETE ON users BEGIN
  INSERT INTO users_search (users_search, rowid, name_lower, email_lower)
    VALUES ('delete', old.created_at, old.name_lower, old.email_lower);
END;

CREATE TRIGGER users_search_update AFTER UPDATE OF name_lower, email_lower ON users
  WHEN old.name_lower IS NOT new.name_lower OR old.email_lower IS NOT new.email_lower
BEGIN
  INSERT INTO users_search (users_search, rowid, name_lower, email_lower)
    VALUES ('delete', old.created_at, old.name_lower, old.email_lower);
  INSERT INTO users_search (rowid, name_lower, email_lower) VALUES (new.created_at, new.name_lower, new.email_lower);
END;

INSERT INTO users_search (users_search) VALUES ('rebuild');
