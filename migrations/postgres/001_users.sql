-- The users of Roster. Applied by `roster migrate` or at start-up (src/users/postgres-migrations.ts),
-- inside one transaction; never edit a migration once released, add the next number instead.
--
-- name, email and role hold what the client sent, with U+0000, U+0001 and lone surrogates escaped
-- (src/users/postgres-text.ts), under COLLATE "C" so that they sort by code point as the contract says.
-- name_lower and email_lower hold JavaScript's toLowerCase() of them (search is case-insensitive by
-- JavaScript's rules, which PostgreSQL's lower() does not follow), email_key the normalised email
-- that decides uniqueness (emailKey() in src/users/store.ts).

CREATE TABLE users (
  id          text COLLATE "C" PRIMARY KEY,
  name        text COLLATE "C" NOT NULL,
  email       text COLLATE "C" NOT NULL,
  role        text COLLATE "C" NOT NULL,
  -- UTC, microseconds; from roster_clock, so strictly increasing over every instance.
  created_at  timestamp(6) NOT NULL,
  updated_at  timestamp(6) NOT NULL,
  name_lower  text COLLATE "C" NOT NULL,
  email_lower text COLLATE "C" NOT NULL,
  email_key   text COLLATE "C" NOT NULL,
  -- Exactly one user of those sharing an email_key claims it. Creating a user needs the claim, so the
  -- unique index below decides races between instances; PUT and PATCH in the contract's default mode
  -- may give a second user the same email without the claim (the memory store allows the same).
  claims_email boolean NOT NULL
);

-- created_at is the creation order: the default list, and the tie-break of every other sort.
CREATE UNIQUE INDEX users_created_at ON users (created_at);
CREATE INDEX users_role ON users (role, created_at);
CREATE INDEX users_role_desc ON users (role DESC, created_at);
CREATE INDEX users_name ON users (name, created_at);
CREATE INDEX users_email ON users (email, created_at);
CREATE INDEX users_updated_at ON users (updated_at, created_at);
CREATE INDEX users_email_key ON users (email_key);
CREATE UNIQUE INDEX users_email_claim ON users (email_key) WHERE claims_email;

-- One row: the last timestamp handed out. Writes take the next one from it in the same statement, so
-- timestamps are strictly increasing across instances and in commit order (the row lock orders them).
CREATE TABLE roster_clock (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  last     timestamp(6) NOT NULL
);
INSERT INTO roster_clock (last) VALUES ('-infinity');

-- Search is a substring test (LIKE '%needle%'); trigram indexes answer it without reading every row.
-- pg_trgm is an extension the database user may not be allowed to create: then search reads the table.
DO $$
DECLARE
  trgm regnamespace;
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available (%); search will read the whole users table', SQLERRM;
    RETURN;
  END;
  SELECT extnamespace::regnamespace INTO trgm FROM pg_extension WHERE extname = 'pg_trgm';
  EXECUTE format('CREATE INDEX users_name_search ON users USING gin (name_lower %s.gin_trgm_ops)', trgm);
  EXECUTE format('CREATE INDEX users_email_search ON users USING gin (email_lower %s.gin_trgm_ops)', trgm);
END
$$;
