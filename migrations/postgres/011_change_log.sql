-- The change log (src/users/changes.ts, docs/decisions.md "Live changes"), shared by every instance.
--
-- A trigger on users appends one row per create, update and delete in the writing transaction itself,
-- so a change commits or rolls back with its write, whichever statement made it. An update counts
-- when it stamps updated_at (every write of a user does; passing an email claim on to an heir does not).
-- The row keeps the user as written (to_jsonb of the new row; the store reads it back through its
-- own column list) and the roles before and after, for the feed's role filter.
--
-- Ordering without a shared write lock. A number drawn at insert (a bigserial) is not commit order: a
-- reader could see 11 committed while 10 is still in flight, read past 10, and never see it. So writes
-- insert their change with seq NULL (numbered only by `pos`, for the order of its arrival), and
-- roster_sequence_changes() numbers the committed ones: it runs in its own short transaction, under a
-- transaction-level advisory lock taken with try (one numbering at a time, over every instance; an
-- instance that finds it taken lets the holder do it), and numbers what it sees committed, by `pos`.
-- A change committed after that statement's snapshot waits for the next run and gets a larger number.
-- Readers read only numbered rows up to the head (change_log_meta), which the same transaction
-- moves, so what they see below the head never grows. Two writes of one user commit in order (the
-- row lock), so their changes are numbered in that order. Writers never wait for one another here.
-- The run also notifies "roster_changes.<schema>" (LISTEN, every instance) and trims by count and age.

CREATE TABLE change_log (
  pos         bigserial PRIMARY KEY,
  seq         bigint UNIQUE,
  type        text NOT NULL,
  id          text COLLATE "C" NOT NULL,
  user_row    jsonb,
  role        text COLLATE "C",
  role_before text COLLATE "C",
  at          timestamp(6) NOT NULL,
  appended    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX change_log_unnumbered ON change_log (pos) WHERE seq IS NULL;

CREATE SEQUENCE change_log_seq;

CREATE TABLE change_log_meta (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  epoch    text NOT NULL,
  head     bigint NOT NULL
);

INSERT INTO change_log_meta (epoch, head) VALUES (substr(md5(random()::text || clock_timestamp()::text), 1, 12), 0);

CREATE FUNCTION roster_user_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO change_log (type, id, user_row, role, role_before, at)
    VALUES ('created', NEW.id, to_jsonb(NEW), NEW.role, NULL, NEW.updated_at);
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO change_log (type, id, user_row, role, role_before, at)
    VALUES ('updated', NEW.id, to_jsonb(NEW), NEW.role, OLD.role, NEW.updated_at);
  ELSE
    INSERT INTO change_log (type, id, user_row, role, role_before, at)
    VALUES ('deleted', OLD.id, NULL, NULL, OLD.role, clock_timestamp() AT TIME ZONE 'UTC');
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER users_change_written AFTER INSERT OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION roster_user_change();
CREATE TRIGGER users_change_updated AFTER UPDATE ON users
  FOR EACH ROW WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION roster_user_change();

-- Numbers the committed changes not numbered yet (at most `batch`), trims, and returns the head, and
-- whether another run held the lock (then the caller tries again soon: that run may have missed its write).
CREATE FUNCTION roster_sequence_changes(keep bigint, max_age interval, batch integer)
RETURNS TABLE (head bigint, busy boolean) LANGUAGE plpgsql AS $$
DECLARE
  numbered bigint;
  new_head bigint;
BEGIN
  -- 7 234 001: the key of this lock, an arbitrary constant no other lock of Roster uses.
  IF NOT pg_try_advisory_xact_lock(7234001) THEN
    RETURN QUERY SELECT m.head, true FROM change_log_meta m;
    RETURN;
  END IF;
  UPDATE change_log c SET seq = n.seq
  FROM (SELECT p.pos, nextval('change_log_seq') AS seq
        FROM (SELECT u.pos FROM change_log u WHERE u.seq IS NULL ORDER BY u.pos LIMIT batch) p) n
  WHERE c.pos = n.pos;
  GET DIAGNOSTICS numbered = ROW_COUNT;
  IF numbered > 0 THEN
    UPDATE change_log_meta m SET head = (SELECT max(u.seq) FROM change_log u) RETURNING m.head INTO new_head;
    PERFORM pg_notify('roster_changes.' || current_schema(), new_head::text);
    DELETE FROM change_log u WHERE u.seq <= new_head - keep;
  END IF;
  -- Past the age: among the oldest `batch` numbered rows (a seek on the seq index; rows are appended in
  -- time order, so the old ones are at its front). A filter on `appended` alone would walk the whole
  -- index on every run while nothing is old.
  DELETE FROM change_log u WHERE u.pos IN (
    SELECT o.pos FROM (SELECT f.pos, f.appended FROM change_log f WHERE f.seq IS NOT NULL ORDER BY f.seq LIMIT batch) o
    WHERE o.appended < now() - max_age);
  RETURN QUERY SELECT m.head, numbered >= batch FROM change_log_meta m;
END $$;
