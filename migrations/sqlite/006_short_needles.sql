-- Search of one or two characters without reading every user: for every piece of one or two
-- characters (a "gram") of the users' lower-cased name and email, and every role, the number of users
-- holding it in either field (src/users/stores/sqlite/short-needles.ts). A short needle's total is one
-- read of this table; its page walks the list's order and stops when the page is full.
--
-- The counts follow the trigram index (migration 005): the store's batch that indexes the users written
-- since the last time adjusts them in the same transaction, from each noted user's text and role as
-- indexed (users_search_pending) and as they are now, and from the users created since the mark. A
-- write itself adds nothing to its transaction but the note it already wrote: updating some fifty
-- counts per create in the write's own transaction would write a dozen more pages per create.
-- A role change is a change of the counts too, so the notes now hold the role, and a change of the
-- role alone is noted.
--
-- The index is brought up to date first (the steps of search-index.ts), so that every user is counted
-- as the index holds it and no note is left without its role; then the counts are filled from the
-- users, by the SQL aggregate roster_gram_counts (registered by the store's connection, in JavaScript:
-- the pieces are of the original text, whose escapes (src/users/stores/sql/stored-text.ts) SQL's
-- substr() does not know).

INSERT INTO users_search (users_search, rowid, name_lower, email_lower)
  SELECT 'delete', rowid, name_lower, email_lower FROM users_search_pending;
INSERT INTO users_search (rowid, name_lower, email_lower)
  SELECT users.created_at, users.name_lower, users.email_lower
  FROM users_search_pending CROSS JOIN users ON users.created_at = users_search_pending.rowid;
INSERT INTO users_search (rowid, name_lower, email_lower)
  SELECT created_at, name_lower, email_lower FROM users
  WHERE created_at > (SELECT indexed_up_to FROM users_search_state);
UPDATE users_search_state SET indexed_up_to = coalesce((SELECT max(created_at) FROM users), indexed_up_to);
DELETE FROM users_search_pending;

ALTER TABLE users_search_pending ADD COLUMN role BLOB;

DROP TRIGGER users_search_delete;
DROP TRIGGER users_search_update;

CREATE TRIGGER users_search_delete AFTER DELETE ON users
  WHEN old.created_at <= (SELECT indexed_up_to FROM users_search_state)
BEGIN
  INSERT OR IGNORE INTO users_search_pending (rowid, name_lower, email_lower, role)
    VALUES (old.created_at, old.name_lower, old.email_lower, old.role);
END;

CREATE TRIGGER users_search_update AFTER UPDATE OF name_lower, email_lower, role ON users
  WHEN (old.name_lower IS NOT new.name_lower OR old.email_lower IS NOT new.email_lower OR old.role IS NOT new.role)
    AND old.created_at <= (SELECT indexed_up_to FROM users_search_state)
BEGIN
  INSERT OR IGNORE INTO users_search_pending (rowid, name_lower, email_lower, role)
    VALUES (old.created_at, old.name_lower, old.email_lower, old.role);
END;

CREATE TABLE users_search_grams (
  gram  TEXT NOT NULL,
  role  BLOB NOT NULL,
  users INTEGER NOT NULL,
  PRIMARY KEY (gram, role)
) WITHOUT ROWID;

INSERT INTO users_search_grams (gram, role, users)
  SELECT counted.key, per_role.role, counted.value
  FROM (SELECT role, roster_gram_counts(name_lower, email_lower) AS grams FROM users GROUP BY role) AS per_role,
    json_each(per_role.grams) AS counted;
