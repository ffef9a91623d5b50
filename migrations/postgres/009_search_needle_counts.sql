-- Search totals kept exact through writes (replaces migration 005's per-instance totals). Migration 005
-- let an instance reuse a total it counted only while no user changed; any write anywhere made every
-- search count its matches again (75 ms for a term matching 2.5 % at 1 000 000 users, read from the
-- heap, which the trigram index cannot confirm alone). Now the database keeps, for the needles searched
-- lately, the number of matching users per role, and a trigger keeps that number up to date in the
-- transaction of each write; a search reads it in the same statement as its page
-- (src/users/stores/postgres/list.ts).
--
-- A needle's count is the sum of its rows in search_needle_counts, per role: a base row counted once
-- when the needle is registered, and one row per write that moved a user in or out of its matches
-- (+1 / -1). Writers only ever insert rows, so no writer waits for another (docs/decisions.md: no write
-- may wait on a row that every other write also takes). Reads fold the rows into one from time to time
-- (roster_compact_needle), so the sum stays short.
--
-- Registering a needle must neither lose nor double-count a write that runs meanwhile, on any instance:
--
-- 1. roster_keep_needle takes the exclusive advisory lock below, inserts the needle (ready = false)
--    and commits. Every write's trigger takes the same lock shared, before it reads the needles, and
--    holds it until its transaction ends; so the exclusive lock waits for the writes that read the
--    needles without this one, until they commit, and a write that waited then reads the needles again
--    (a fresh snapshot: trigger functions are VOLATILE, writes run in READ COMMITTED) and sees it.
--    Writers wait only for that insert.
-- 2. The instance then, with the needle's row locked, counts the matches and deletes the needle's delta
--    rows in ONE statement (one snapshot): a write committed before that snapshot is in the count and
--    its delta row is deleted; a write committed after keeps its delta row. The count, by role, becomes
--    the base, and the needle ready.
--
-- Whatever else changes a needle's rows takes the needle's row lock first and then works in a statement
-- of its own, with a snapshot taken after that lock: registration (step 2), compaction, eviction and
-- TRUNCATE. So none of them deletes rows another one has just replaced by their sum. Step 2 takes its
-- lock on users before the needle's row, in the order TRUNCATE takes them, so the two never deadlock. Writers in
-- REPEATABLE READ or SERIALIZABLE transactions (not Roster's own) could read the needles in a snapshot
-- older than the lock; such a writer would miss a needle registered during its transaction.

CREATE TABLE search_needles (
  -- The needle's LIKE pattern (anywherePattern() in src/users/stores/sql/stored-text.ts), which the
  -- list's statement carries as a value: its key.
  pattern text COLLATE "C" PRIMARY KEY,
  -- The stored, lower-cased needle, and whether a match must start at a whole character (migration 003).
  needle  text COLLATE "C" NOT NULL,
  aligned boolean NOT NULL,
  -- False from step 1 until step 2 has counted the base: the rows do not make a total yet.
  ready   boolean NOT NULL DEFAULT false,
  -- When a search last read it (moved at most every few seconds); the least recent goes first.
  used_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE search_needle_counts (
  pattern text COLLATE "C" NOT NULL,
  role    text COLLATE "C" NOT NULL,
  users   bigint NOT NULL
);
CREATE INDEX search_needle_counts_pattern ON search_needle_counts (pattern, role) INCLUDE (users);

-- Whether a user's lower-cased column matches a kept needle: the list's expression (list.ts, `searched`).
CREATE FUNCTION roster_search_matches(haystack text, pattern text, needle text, aligned boolean) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT haystack LIKE pattern AND (NOT aligned OR strpos(haystack, E'\x01') = 0 OR roster_contains_aligned(haystack, needle))
$$;

-- The lock of registration (above), per schema: step 1 takes it exclusive, every write shared.
CREATE FUNCTION roster_needles_lock() RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT hashtextextended('roster.search:' || current_schema(), 0)
$$;

CREATE FUNCTION roster_count_needles() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- No user left: no needle is worth its rows. The first statement waits for the needles' row locks.
    DELETE FROM search_needles;
    DELETE FROM search_needle_counts;
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(roster_needles_lock());
  -- OLD is null on INSERT, NEW on DELETE. An update that stays within a needle's matches in its role
  -- adds nothing.
  INSERT INTO search_needle_counts (pattern, role, users)
  SELECT n.pattern, w.role, sum(w.delta)
  FROM search_needles n
  JOIN (VALUES (OLD.role, OLD.name_lower, OLD.email_lower, -1), (NEW.role, NEW.name_lower, NEW.email_lower, 1))
    AS w (role, name_lower, email_lower, delta)
    ON w.role IS NOT NULL
   AND (roster_search_matches(w.name_lower, n.pattern, n.needle, n.aligned)
        OR roster_search_matches(w.email_lower, n.pattern, n.needle, n.aligned))
  GROUP BY n.pattern, w.role
  HAVING sum(w.delta) <> 0;
  RETURN NULL;
END
$$;

-- Every write of the columns a search reads (role: a search may filter by it). An update that sets
-- them to what they were (the store's updates set every column) adds nothing and reads no needle.
CREATE TRIGGER users_count_needles AFTER INSERT OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION roster_count_needles();
CREATE TRIGGER users_count_needle_changes AFTER UPDATE OF name_lower, email_lower, role ON users
  FOR EACH ROW WHEN (OLD.name_lower IS DISTINCT FROM NEW.name_lower OR OLD.email_lower IS DISTINCT FROM NEW.email_lower
                     OR OLD.role IS DISTINCT FROM NEW.role)
  EXECUTE FUNCTION roster_count_needles();
CREATE TRIGGER users_count_needles_truncate AFTER TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION roster_count_needles();

-- Step 1 of registering (above); `most`: the needles kept at most, the least recently used evicted
-- beyond it, with their rows (no write is between its trigger and its commit while the lock is held,
-- so none can leave a row of an evicted needle behind). Waits at most `wait` for the lock, then fails
-- (lock_not_available), and the search counts instead: writers queue behind a waiting exclusive lock.
CREATE FUNCTION roster_keep_needle(kept_pattern text, kept_needle text, kept_aligned boolean, most integer, wait text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  evicted text[];
  waited text := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', wait, true);
  PERFORM pg_advisory_xact_lock(roster_needles_lock());
  PERFORM set_config('lock_timeout', waited, true);
  INSERT INTO search_needles (pattern, needle, aligned) VALUES (kept_pattern, kept_needle, kept_aligned)
    ON CONFLICT (pattern) DO NOTHING;
  WITH gone AS (
    DELETE FROM search_needles WHERE pattern IN (
      SELECT pattern FROM search_needles WHERE pattern <> kept_pattern
      ORDER BY used_at DESC, pattern OFFSET greatest(most - 1, 0))
    RETURNING pattern)
  SELECT array_agg(pattern) INTO evicted FROM gone;
  IF evicted IS NOT NULL THEN
    DELETE FROM search_needle_counts WHERE pattern = ANY (evicted);
  END IF;
END
$$;

-- Folds a ready needle's rows into one per role: the rows this statement's snapshot sees are deleted
-- and their sum inserted, in one statement, so every snapshot sees the same total before and after.
-- Skips a needle whose row another session holds (a compaction under way, a registration).
CREATE FUNCTION roster_compact_needle(kept_pattern text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM search_needles WHERE pattern = kept_pattern AND ready FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN RETURN; END IF;
  WITH gone AS (DELETE FROM search_needle_counts WHERE pattern = kept_pattern RETURNING role, users)
  INSERT INTO search_needle_counts (pattern, role, users)
  SELECT kept_pattern, role, sum(users) FROM gone GROUP BY role HAVING sum(users) <> 0;
END
$$;

-- Upkeep, run by a search at most every few seconds (when it marks its needle used, list.ts): folds the
-- rows of every needle that has more than `most_rows`, searched or not (writes add rows to every kept
-- needle, and only searches fold them); drops needles not searched for `idle`, which cost every write
-- and hold nothing anyone reads; and deletes rows left by writes that were under way when their needle
-- went (harmless, as registering again deletes them, but never read).
CREATE FUNCTION roster_tidy_needles(most_rows integer, idle interval) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  crowded text;
BEGIN
  FOR crowded IN
    SELECT pattern FROM search_needle_counts GROUP BY pattern HAVING count(*) > most_rows
  LOOP
    PERFORM roster_compact_needle(crowded);
  END LOOP;
  DELETE FROM search_needles WHERE used_at < now() - idle;
  DELETE FROM search_needle_counts c WHERE NOT EXISTS (SELECT 1 FROM search_needles n WHERE n.pattern = c.pattern);
END
$$;

-- Migration 005's number of changes (user_changes) is no longer read by this version, but is kept up to
-- date still: an instance of the previous version, running until it is replaced, reuses its totals by
-- it. A later migration drops it, once no such instance can be running.
