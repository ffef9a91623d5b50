-- The change log (src/users/changes.ts, docs/decisions.md "Live changes"): one row per create, update
-- and delete, inserted in the same transaction as the write, so a change is in the log exactly when
-- the write is in the file. `seq` is AUTOINCREMENT so that a number is never handed out twice, even
-- once retention has emptied the table (sqlite_sequence keeps the head). `user` is the user as written,
-- as JSON (null for a delete); `role` and `role_before` serve the feed's role filter without reading
-- it; `appended` (ms since the epoch) serves CHANGES_MAX_AGE_SECONDS. The epoch names this log's life:
-- a cursor of another file, or of this one before it was created again, is answered with a reset.

CREATE TABLE change_log (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  type        TEXT NOT NULL,
  id          TEXT NOT NULL,
  user        TEXT,
  role        TEXT,
  role_before TEXT,
  at          TEXT NOT NULL,
  appended    INTEGER NOT NULL
);

CREATE TABLE change_log_epoch (
  only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
  epoch    TEXT NOT NULL
);

INSERT INTO change_log_epoch (only_row, epoch) VALUES (1, lower(hex(randomblob(6))));
