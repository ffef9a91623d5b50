-- Indexes for deep pages (src/users/stores/sqlite/list-sql.ts: pageIndex). A page at offset
-- n walks the index entries before it; each entry ends with the rowid (created_at), so only the index
-- is read, never the table.
--
-- users_created: creation order. The table is already in it, but walking the table reads every row
-- (a middle page at 1 000 000 users read hundreds of MB); this index holds the rowid alone. created_at
-- never changes and grows, so only inserts write it, at its end.
--
-- A role filter with a sort walks the sort's own index and tests each entry's role there: the sort
-- indexes now carry the role after created_at, which is unique, so the order is the one they had.
-- Separate (role, field) indexes would walk only that role's entries, but cost every write one more
-- index each: measured at 200 000 users, six of them doubled the cost of an insert and of a patch.
-- A role's entries are walked from the nearer end of its count, so a page passes at most about half
-- of the index. id stays in its unique index, which cannot carry the role: (role, id) serves it.
-- A role filter with sort=created_at or sort=role (creation order) walks users_role, as before.
--
-- Applied at start-up like every migration: SQLite builds each index in one pass over the table, and
-- nothing else uses the file meanwhile (the process owns it).

CREATE INDEX users_created ON users (created_at);
CREATE INDEX users_role_id ON users (role, id);

DROP INDEX users_name;
CREATE INDEX users_name ON users (name, created_at, role);
DROP INDEX users_name_desc;
CREATE INDEX users_name_desc ON users (name DESC, created_at, role);
DROP INDEX users_email;
CREATE INDEX users_email ON users (email, created_at, role);
DROP INDEX users_email_desc;
CREATE INDEX users_email_desc ON users (email DESC, created_at, role);
DROP INDEX users_updated_at;
CREATE INDEX users_updated_at ON users (updated_at, role);
