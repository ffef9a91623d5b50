-- Search for needles whose first stored character can also be the inside of an escape (postgres-text.ts):
-- such a match counts only where it starts at a whole character. This function decides that by walking
-- the stored string once, escape by escape, instead of a regular expression built from the needle (whose
-- cost grew faster than the needle's length). The caller runs it only on rows that LIKE already found
-- to contain the needle somewhere and that hold an escape at all; on every other row LIKE is exact.
CREATE FUNCTION roster_contains_aligned(haystack text, needle text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  chars text[] := string_to_array(haystack, NULL);  -- one element per character: O(1) indexing
  wanted text[] := string_to_array(needle, NULL);
  n int := coalesce(array_length(chars, 1), 0);
  m int := coalesce(array_length(wanted, 1), 0);
  at int := 1;                                       -- always the start of a whole character
BEGIN
  IF m = 0 THEN RETURN true; END IF;
  WHILE at + m - 1 <= n LOOP
    IF chars[at] = wanted[1] AND chars[at:at + m - 1] = wanted THEN RETURN true; END IF;
    IF chars[at] <> E'\x01' THEN at := at + 1;
    ELSIF chars[at + 1] = E'\x03' THEN at := at + 3;   -- a lone surrogate: 01 03 X
    ELSE at := at + 2;                                 -- U+0000 or U+0001: 01 01, 01 02
    END IF;
  END LOOP;
  RETURN false;
END $$;
