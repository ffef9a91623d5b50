-- Writes that scale out (docs/decisions.md: no write may wait on a row that every other write also
-- takes). Two such rows are gone:
--
-- 1. roster_clock: every create and update took its one row until commit, so the whole deployment's
--    writes queued behind it. Timestamps now come from the database clock (clock_timestamp(), UTC,
--    microseconds) and need not be strictly increasing across instances; a sequence breaks ties, so
--    creation order, (created_at, seq), stays total and stable. Sequences never block.
-- 2. user_role_counts: one row per role, taken by every create and delete of that role. Now a role's
--    count is the sum of any number of rows; a write adds to the first row no one else holds (SKIP
--    LOCKED) or, when all are held, inserts a new one. A writer never waits for another.

CREATE SEQUENCE users_seq;
ALTER TABLE users ADD COLUMN seq bigint;
WITH ordered AS (SELECT id, row_number() OVER (ORDER BY created_at) AS n FROM users)
  UPDATE users SET seq = ordered.n FROM ordered WHERE users.id = ordered.id;
SELECT setval('users_seq', coalesce((SELECT max(seq) FROM users), 0) + 1, false);
ALTER TABLE users ALTER COLUMN seq SET DEFAULT nextval('users_seq'), ALTER COLUMN seq SET NOT NULL;
ALTER SEQUENCE users_seq OWNED BY users.seq;

-- Creation order is (created_at, seq); every sort index ends with it.
DROP INDEX users_created_at;
CREATE UNIQUE INDEX users_created ON users (created_at, seq);
DROP INDEX users_role;
CREATE INDEX users_role ON users (role, created_at, seq);
DROP INDEX users_role_desc;
CREATE INDEX users_role_desc ON users (role DESC, created_at, seq);
DROP INDEX users_name;
CREATE INDEX users_name ON users (name, created_at, seq);
DROP INDEX users_email;
CREATE INDEX users_email ON users (email, created_at, seq);
DROP INDEX users_updated_at;
CREATE INDEX users_updated_at ON users (updated_at, created_at, seq);

DROP TABLE roster_clock;

CREATE SEQUENCE user_role_count_shards;
ALTER TABLE user_role_counts ADD COLUMN shard bigint NOT NULL DEFAULT 0;
ALTER TABLE user_role_counts DROP CONSTRAINT user_role_counts_pkey;
ALTER TABLE user_role_counts ADD PRIMARY KEY (role, shard);

CREATE OR REPLACE FUNCTION roster_add_role_count(counted text, delta integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  free bigint;
BEGIN
  SELECT shard INTO free FROM user_role_counts WHERE role = counted LIMIT 1 FOR UPDATE SKIP LOCKED;
  IF FOUND THEN
    UPDATE user_role_counts SET users = users + delta WHERE role = counted AND shard = free;
  ELSE
    INSERT INTO user_role_counts (role, shard, users) VALUES (counted, nextval('user_role_count_shards'), delta);
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION roster_count_roles() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM user_role_counts;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    PERFORM roster_add_role_count(OLD.role, -1);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM roster_add_role_count(NEW.role, 1);
  END IF;
  RETURN NULL;
END
$$;
