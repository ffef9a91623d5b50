-- Indexes for deep pages (src/users/stores/sqlite/sqlite-store.ts: list, pageIndex). A page at offset
-- n walks n index entries; each entry ends with the rowid (created_at), so only the index is read.
--
-- users_created: creation order. The table is already in it, but walking the table reads every row
-- (a middle page at 1 000 000 users read hundreds of MB); this index holds the rowid alone. created_at
-- never changes, so only inserts and deletes write it.
--
-- users_role_*: one role's users in the list's order, so a page of `role = ? ORDER BY field` walks only
-- that role's entries instead of every user's, testing each. A role filter with sort=created_at or
-- sort=role (creation order) walks users_role; id and updated_at are unique, so one index serves both
-- directions of each.
--
-- Applied at start-up like every migration: SQLite builds each index in one pass over the table (about
-- 25 s for all of them at 1 000 000 users), and nothing else uses the file meanwhile (the process owns it).

CREATE INDEX users_created ON users (created_at);

CREATE INDEX users_role_id ON users (role, id);
CREATE INDEX users_role_updated_at ON users (role, updated_at);
CREATE INDEX users_role_name ON users (role, name);
CREATE INDEX users_role_name_desc ON users (role, name DESC);
CREATE INDEX users_role_email ON users (role, email);
CREATE INDEX users_role_email_desc ON users (role, email DESC);
