-- Search totals without counting every search (issue 19). A search's total is count(*) of its matches,
-- which reads every match (trigram index, then the rows) or the whole table: about 40 ms at 100 000
-- users for a term matching 2.5 %. An instance keeps the totals it has counted (src/users/postgres-store.ts),
-- each with the number of changes to the searched columns it was counted after; a search reads that
-- number in the same statement as its page, and counts again only when it moved. The total is then
-- exactly what count(*) would give in that statement's snapshot: the number only grows, by one per
-- committed statement that changed users, so equal numbers mean the same committed changes.
--
-- The number is a sum over rows, like the per-role counts of migration 004: a writer adds one to the
-- first row no one else holds (SKIP LOCKED), or inserts a new row; no writer waits for another.

CREATE SEQUENCE user_change_shards;
CREATE TABLE user_changes (
  shard   bigint PRIMARY KEY,
  changes bigint NOT NULL
);
INSERT INTO user_changes (shard, changes) VALUES (nextval('user_change_shards'), 0);

CREATE FUNCTION roster_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  free bigint;
BEGIN
  SELECT shard INTO free FROM user_changes LIMIT 1 FOR UPDATE SKIP LOCKED;
  IF FOUND THEN
    UPDATE user_changes SET changes = changes + 1 WHERE shard = free;
  ELSE
    INSERT INTO user_changes (shard, changes) VALUES (nextval('user_change_shards'), 1);
  END IF;
  RETURN NULL;
END
$$;

-- Once per statement, not per row: a bulk insert adds one. Role changes count too (a search may filter
-- by role). A statement that changed no row still adds one; that only costs a count.
CREATE TRIGGER users_count_changes
  AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF name_lower, email_lower, role ON users
  FOR EACH STATEMENT EXECUTE FUNCTION roster_count_change();
