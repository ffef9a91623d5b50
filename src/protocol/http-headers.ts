/**
 * The HTTP headers of Roster's own rules, named once for the service and its clients: a create's
 * idempotency key and the mark of a replayed reply, a user's entity tag and the preconditions on it,
 * how long to wait before trying again, the next page, the request's id and the 401's challenge. Lower case, as Node and fetch hand
 * header names over; HTTP names are case-insensitive.
 */
export const IDEMPOTENCY_KEY = 'idempotency-key';
export const IDEMPOTENT_REPLAYED = 'idempotent-replayed';
export const ETAG = 'etag';
export const IF_MATCH = 'if-match';
export const IF_NONE_MATCH = 'if-none-match';
export const IF_UNMODIFIED_SINCE = 'if-unmodified-since';
export const RETRY_AFTER = 'retry-after';
/** Web links (RFC 8288): a list page names the next one with `rel="next"`. */
export const LINK = 'link';
/** The request's id, kept from the client's or made up, on every reply and in its log line. */
export const X_REQUEST_ID = 'x-request-id';
/** The change feed's cursor to follow from after a 410 CHANGES_RESET (docs/rest-api.md "Live changes"). */
export const ROSTER_CHANGES_CURSOR = 'roster-changes-cursor';
/** Where a Server-Sent Events client resumes: the id of the last event it received. */
export const LAST_EVENT_ID = 'last-event-id';
/** The scheme a 401 asks for (RFC 9110 §11.6.1). */
export const WWW_AUTHENTICATE = 'www-authenticate';

/**
 * The target of the `rel="next"` link of a Link header value (RFC 8288 §3), or undefined. Links are
 * `<target>` followed by `;`-separated parameters, several joined by commas; a comma inside `<…>` or a
 * quoted string belongs to it. By hand: the service writes one plain link, and the link-header packages
 * on npm pull in more than this reads.
 */
export function nextLinkOf(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  for (const link of header.matchAll(/<([^>]*)>((?:\s*;\s*[^;,=\s]+(?:\s*=\s*(?:"(?:[^"\\]|\\.)*"|[^;,\s]*))?)*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^;,\s]+))/i.exec(link[2]!);
    const relations = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (relations.includes('next')) return link[1];
  }
  return undefined;
}

/** The longest idempotency key the service takes (characters). */
export const IDEMPOTENCY_KEY_MAX = 255;

/**
 * An idempotency key as the header's Structured Field String (RFC 8941 §3.3.3): in double quotes, with
 * `"` and `\` escaped. Only printable ASCII may be sent, 1 to IDEMPOTENCY_KEY_MAX characters.
 */
export function idempotencyKeyField(key: string): string {
  if (key.length < 1 || key.length > IDEMPOTENCY_KEY_MAX || !/^[\x20-\x7e]+$/.test(key))
    throw new RangeError(`an idempotency key is 1 to ${IDEMPOTENCY_KEY_MAX} printable ASCII characters`);
  return `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
