-- Timestamps that strictly increase within each instance (docs/decisions.md), without a lock that
-- writes hold until commit. Migration 004 stamps writes with clock_timestamp(): two writes of one
-- instance on two pooled connections could read the same microsecond, and did (two of 20 concurrent
-- creates, in one CI run).
--
-- roster_stamp(instance) reads the clock under a session advisory lock keyed by the instance (a random
-- 64-bit key each Roster instance draws at start-up) and holds the lock until the clock has moved on
-- from what it read, about a microsecond; the next write of that instance therefore reads a later
-- microsecond. The lock is released inside the call, not at commit, so the writes of one instance wait
-- for each other only for that microsecond, and the writes of other instances never wait at all.
-- Writes of different instances may still share a microsecond; (created_at, seq) orders them.
--
-- A session lock outlives an aborted transaction, so every way out of the critical part (including a
-- statement timeout or a cancel) releases it. If the clock is stepped back, the wait ends at once (it
-- waits only while the clock reads the same microsecond) and strictness holds again once the clock
-- passes the last stamp.

CREATE FUNCTION roster_stamp(instance bigint) RETURNS timestamp LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  stamp timestamp;
BEGIN
  PERFORM pg_advisory_lock(instance);
  BEGIN
    stamp := clock_timestamp() AT TIME ZONE 'UTC';
    WHILE clock_timestamp() AT TIME ZONE 'UTC' = stamp LOOP
    END LOOP;
  EXCEPTION WHEN OTHERS OR query_canceled THEN
    PERFORM pg_advisory_unlock(instance);
    RAISE;
  END;
  PERFORM pg_advisory_unlock(instance);
  RETURN stamp;
END
$$;
