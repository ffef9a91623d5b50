-- Idempotency keys of creates (src/http/idempotency.ts, src/users/idempotency-keys.ts), shared by every
-- instance on the database: per principal, the key, the SHA-256 of the body it came with, the claim's
-- token, and once the create is over its reply (status, headers as JSON text, body). Times are
-- milliseconds since the epoch, from the instances' clocks. A row without a status is in flight until
-- lease_until; every row is forgotten at expires_at (deleted lazily by claims, and swept by each
-- instance about once a minute through the index below).
--
-- A claim is one INSERT … ON CONFLICT statement of its own, committed before the user is inserted: a
-- second instance claiming the same key sees the first one's row (in flight, or done) at once.
-- Online: a new table, nothing existing is rewritten or locked.

CREATE TABLE idempotency_keys (
  principal   text NOT NULL,
  key         text NOT NULL,
  fingerprint text NOT NULL,
  token       text NOT NULL,
  expires_at  bigint NOT NULL,
  lease_until bigint NOT NULL,
  status      integer,
  headers     text,
  body        text,
  PRIMARY KEY (principal, key)
);

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
