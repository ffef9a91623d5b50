/**
 * The file formats of `roster users export|import`: JSON (an array or JSON lines) and CSV, read one
 * record at a time as the file streams past, and CSV cells written so that a spreadsheet never takes
 * one for a formula.
 */

export type Format = 'json' | 'csv';
export type UserRecord = Record<string, unknown>;

/**
 * A cell a spreadsheet would run as a formula (OWASP's CSV injection: it begins with = + - @, a tab or
 * a CR), behind any apostrophes: written with one more apostrophe in front, so that a spreadsheet shows
 * it as text. Import takes exactly that apostrophe off again (csvRecords), so a round trip is exact.
 */
const FORMULA_LIKE = /^'*[=+\-@\t\r]/;

export function csvCell(value: unknown): string {
  const raw = value === undefined || value === null ? '' : String(value);
  const text = FORMULA_LIKE.test(raw) ? `'${raw}` : raw;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The cell as written before csvCell neutralised it: one apostrophe off a formula-like cell. */
function csvValue(cell: string): string {
  return cell.startsWith("'") && FORMULA_LIKE.test(cell) ? cell.slice(1) : cell;
}

/** The records of a JSON array, JSON lines or CSV stream, one at a time; a malformed one is an Error in its place. */
export async function* records(
  input: NodeJS.ReadableStream,
  format: Format | undefined,
): AsyncGenerator<UserRecord | (Error & { email?: undefined })> {
  input.setEncoding('utf8');
  const chunks = input[Symbol.asyncIterator]() as AsyncIterableIterator<string>;
  let first = await chunks.next();
  while (!first.done && first.value.trim() === '') first = await chunks.next();
  if (first.done) return;
  const all = (async function* () {
    yield first.value;
    yield* chunks;
  })();
  const kind = format ?? (/^\s*[[{]/.test(first.value) ? 'json' : 'csv');
  yield* kind === 'json' ? jsonRecords(all) : csvRecords(all);
}

/** Top-level objects of a JSON array or of JSON lines, cut out as they stream past. */
async function* jsonRecords(chunks: AsyncIterable<string>): AsyncGenerator<UserRecord | Error> {
  let buffer = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  let start = -1;
  for await (const chunk of chunks) {
    let i = buffer.length;
    buffer += chunk;
    for (; i < buffer.length; i++) {
      const c = buffer[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
        continue;
      }
      if (c === '"') inString = true;
      else if (c === '{' || c === '[') {
        if (depth === 0 && c === '{') start = i;
        if (depth > 0 || c === '{') depth++;
      } else if ((c === '}' || c === ']') && depth > 0) {
        depth--;
        if (depth === 0) {
          const text = buffer.slice(start, i + 1);
          try {
            yield JSON.parse(text) as UserRecord;
          } catch (error) {
            yield new Error(`not valid JSON: ${(error as Error).message}`);
          }
          buffer = buffer.slice(i + 1);
          i = -1;
        }
      }
    }
    if (depth === 0) buffer = ''; // separators, brackets and white space between records
  }
  if (depth > 0) yield new Error('the input ends inside a record');
}

/** CSV records (RFC 4180: quoted cells may hold commas, quotes and line breaks) as objects keyed by the header row. */
async function* csvRecords(chunks: AsyncIterable<string>): AsyncGenerator<UserRecord> {
  let header: string[] | undefined;
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  let afterQuote = false;
  const finish = (): UserRecord | undefined => {
    row.push(cell);
    cell = '';
    const cells = row;
    row = [];
    if (cells.length === 1 && cells[0] === '') return undefined; // a blank line
    if (!header) {
      header = cells.map((name) => name.trim().toLowerCase());
      return undefined;
    }
    return Object.fromEntries(header.map((name, index) => [name, csvValue(cells[index] ?? '')]));
  };
  for await (const chunk of chunks) {
    for (const c of chunk) {
      if (quoted) {
        if (c === '"') {
          quoted = false;
          afterQuote = true;
        } else cell += c;
      } else if (c === '"') {
        if (afterQuote) cell += '"'; // "" inside quotes
        quoted = true;
        afterQuote = false;
      } else {
        afterQuote = false;
        if (c === ',') {
          row.push(cell);
          cell = '';
        } else if (c === '\n') {
          const record = finish();
          if (record) yield record;
        } else if (c !== '\r') cell += c;
      }
    }
  }
  if (cell !== '' || row.length > 0) {
    const record = finish();
    if (record) yield record;
  }
}
