-- Search totals of short needles without counting and without registering them (issue 43). A needle of
-- one to four characters is a gram: the database keeps, for every gram of every user's name and
-- email, the number of users that contain it, per role, and a search of such a needle reads its total
-- from there in the statement of its page (src/users/stores/postgres/postgres-grams.ts). Migration 009's
-- kept needles are left to longer needles that come back.
--
-- A gram is a substring of one stored, lower-cased column (name_lower or email_lower, never across the
-- two) that starts at a whole character (not inside an escape, migration 003), of one to four
-- characters. A user holding a gram in both columns, or twice, counts once. So the users matching a
-- needle of up to four characters are exactly the users holding it as a gram, whatever the needle.
--
-- Writes never wait for each other over these counts (docs/decisions.md: no write may wait on a row that
-- every other write also takes; every email holds the grams of "example.com"), and pay little for them:
-- a write's trigger only inserts a row into search_gram_changes per side of its change, the user's role
-- and searched text as they were (-1) and as they are (+1). Taking a user's grams apart (a hundred or
-- more substrings, about 0.1 ms of the database's time) is left to a fold (roster_fold_grams), one at a
-- time, which moves committed changes into search_gram_counts in one statement: every snapshot sees a
-- change either among the changes or in the counts, never in both or neither. A total is the count
-- plus the changes whose text holds the needle, tested as a search tests a user.

CREATE TABLE search_gram_counts (
  gram  text COLLATE "C" NOT NULL,
  role  text COLLATE "C" NOT NULL,
  users bigint NOT NULL,
  PRIMARY KEY (gram, role)
);

CREATE TABLE search_gram_changes (
  id          bigserial PRIMARY KEY,
  role        text COLLATE "C" NOT NULL,
  name_lower  text COLLATE "C",
  email_lower text COLLATE "C",
  delta       integer NOT NULL
);

-- The positions (1-based) at which a whole character starts in a stored text: every position, unless
-- the text holds an escape (U+0001 and the one or two characters after it, stored-text.ts).
CREATE FUNCTION roster_gram_starts(haystack text) RETURNS int[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  chars text[];
  n int;
  at int := 1;
  starts int[] := '{}';
BEGIN
  IF strpos(haystack, E'\x01') = 0 THEN
    RETURN array(SELECT generate_series(1, length(haystack)));
  END IF;
  chars := string_to_array(haystack, NULL);
  n := coalesce(array_length(chars, 1), 0);
  WHILE at <= n LOOP
    starts := starts || at;
    IF chars[at] <> E'\x01' THEN at := at + 1;
    ELSIF chars[at + 1] = E'\x03' THEN at := at + 3;   -- a lone surrogate: 01 03 X
    ELSE at := at + 2;                                 -- U+0000 or U+0001: 01 01, 01 02
    END IF;
  END LOOP;
  RETURN starts;
END $$;

-- The grams of a user's searched text: (gram) rows, each once.
CREATE FUNCTION roster_user_grams(name_lower text, email_lower text) RETURNS TABLE (gram text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT DISTINCT substr(h, i, l) COLLATE "C"
  FROM unnest(ARRAY[name_lower, email_lower]) h,
       generate_series(1, length(h)) i,
       generate_series(1, least(4, length(h) - i + 1)) l
  WHERE strpos(h, E'\x01') = 0 OR i = ANY (roster_gram_starts(h))
$$;

-- One fold at a time (and TRUNCATE waits for it), per schema.
CREATE FUNCTION roster_grams_lock() RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT hashtextextended('roster.grams:' || current_schema(), 0)
$$;

CREATE FUNCTION roster_count_grams() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- After any fold under way has committed: each DELETE's snapshot then sees what it wrote.
    PERFORM pg_advisory_xact_lock(roster_grams_lock());
    DELETE FROM search_gram_changes;
    DELETE FROM search_gram_counts;
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO search_gram_changes (role, name_lower, email_lower, delta)
      VALUES (OLD.role, OLD.name_lower, OLD.email_lower, -1);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO search_gram_changes (role, name_lower, email_lower, delta)
      VALUES (NEW.role, NEW.name_lower, NEW.email_lower, 1);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER users_count_grams AFTER INSERT OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION roster_count_grams();
CREATE TRIGGER users_count_gram_changes AFTER UPDATE OF name_lower, email_lower, role ON users
  FOR EACH ROW WHEN (OLD.name_lower IS DISTINCT FROM NEW.name_lower OR OLD.email_lower IS DISTINCT FROM NEW.email_lower
                     OR OLD.role IS DISTINCT FROM NEW.role)
  EXECUTE FUNCTION roster_count_grams();
CREATE TRIGGER users_count_grams_truncate AFTER TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION roster_count_grams();

-- Moves up to `most` committed changes, oldest first, into the counts, in one statement; returns how
-- many it moved (0 when another fold holds the lock: it is doing the same).
CREATE FUNCTION roster_fold_grams(most integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  folded integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(roster_grams_lock()) THEN RETURN 0; END IF;
  WITH gone AS (
    DELETE FROM search_gram_changes
    WHERE id IN (SELECT id FROM search_gram_changes ORDER BY id LIMIT most)
    RETURNING role, name_lower, email_lower, delta
  ), moved AS (
    INSERT INTO search_gram_counts AS c (gram, role, users)
    SELECT g.gram, gone.role, sum(gone.delta) FROM gone, roster_user_grams(gone.name_lower, gone.email_lower) g
    GROUP BY g.gram, gone.role HAVING sum(gone.delta) <> 0
    ON CONFLICT (gram, role) DO UPDATE SET users = c.users + excluded.users
  )
  SELECT count(*) INTO folded FROM gone;
  RETURN folded;
END $$;

-- The users there are now wait among the changes, one row each, and folds take them apart after the
-- migration, FOLD_MOST users a statement, beside the requests (postgres-grams.ts: a store folds as it
-- starts). Taking every user's grams apart here, under the write lock the triggers above took, kept
-- writes out for about 16 minutes at 1 000 000 users; copying the two columns takes seconds. Totals
-- are exact throughout (a total is the counts plus the changes); a search of one to four characters
-- reads the changes not folded yet, so it is slower until the folds are done.
INSERT INTO search_gram_changes (role, name_lower, email_lower, delta)
SELECT role, name_lower, email_lower, 1 FROM users;
