-- Idempotency keys of creates (src/http/idempotency.ts, src/users/idempotency-keys.ts): per principal,
-- the key, the SHA-256 of the body it came with, this claim's token, and once the create is over its
-- reply (status, headers as JSON text, body). Times are milliseconds since the epoch. A row without a
-- status is in flight until lease_until; every row is forgotten at expires_at (deleted lazily, and by
-- the sweep of each claim, through the index below).

CREATE TABLE idempotency_keys (
  principal   TEXT NOT NULL,
  key         TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  token       TEXT NOT NULL,
  expires_at  INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  status      INTEGER,
  headers     TEXT,
  body        TEXT,
  PRIMARY KEY (principal, key)
) WITHOUT ROWID;

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
