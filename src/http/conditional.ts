/**
 * ETags and conditional requests of a user (RFC 9110 §8.8.3, §13), as docs/decisions.md "Retries and
 * concurrent edits" rules them. The ETag is the user's version, its `updated_at` quoted: not a hash of
 * the reply, it costs nothing to make. If-Match is decided by the store in the same atomic step as the
 * write (users/store.ts `Expected`).
 */
import type { FastifyRequest } from 'fastify';
import { RosterError } from '../errors.js';
import type { User } from '../users/schema.js';
import type { IfMatch } from '../users/service.js';
import { IDEMPOTENCY_KEY, IF_MATCH, IF_NONE_MATCH, IF_UNMODIFIED_SINCE } from '../protocol/http-headers.js';

export const etagOf = (user: User): string => `"${user.updated_at}"`;

/** One entity-tag of a list: `W/"…"` or `"…"` (etagc: visible ASCII but `"`, and obs-text). */
const ENTITY_TAG = /^\s*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*$/;

interface EntityTag {
  weak: boolean;
  opaque: string;
}

/**
 * A header's list of entity-tags (several headers joined), `*`, or undefined when absent. Members that
 * are not entity-tags are ignored: they can match nothing.
 */
function entityTags(value: string | string[] | undefined): '*' | EntityTag[] | undefined {
  if (value === undefined) return undefined;
  const joined = Array.isArray(value) ? value.join(',') : value;
  if (joined.trim() === '*') return '*';
  const tags: EntityTag[] = [];
  for (const member of joined.split(',')) {
    const match = ENTITY_TAG.exec(member);
    if (match) tags.push({ weak: match[1] !== undefined, opaque: match[2]! });
  }
  return tags;
}

/** If-None-Match: whether the client's copy is current (weak comparison), so 304 is the reply. */
export function notModified(request: FastifyRequest, user: User): boolean {
  const tags = entityTags(request.headers[IF_NONE_MATCH]);
  if (tags === undefined) return false;
  if (tags === '*') return true;
  return tags.some((tag) => tag.opaque === user.updated_at);
}

/**
 * If-Match as the service takes it: `any` for `*`, else the versions of its strong entity-tags (a weak
 * one never matches under strong comparison); undefined when absent, or 428 if REQUIRE_IF_MATCH
 * (absent or `*`).
 * Without If-Match, a valid If-Unmodified-Since (RFC 9110 §13.1.4; an invalid date is ignored).
 */
export function ifMatchOf(request: FastifyRequest, required: boolean): IfMatch | undefined {
  const tags = entityTags(request.headers[IF_MATCH]);
  // `*` only asks that the user exists: a blind write all the same, which REQUIRE_IF_MATCH promises
  // to refuse (RFC 9110 allows `*`; the setting is stricter on purpose).
  if (required && (tags === undefined || tags === '*')) throw ifMatchRequired();
  if (tags === undefined) {
    const since = Date.parse(request.headers[IF_UNMODIFIED_SINCE] ?? '');
    return Number.isNaN(since) ? undefined : { unmodifiedSince: since };
  }
  return tags === '*' ? 'any' : tags.filter((tag) => !tag.weak).map((tag) => tag.opaque);
}

const ifMatchRequired = () =>
  new RosterError(
    'PRECONDITION_REQUIRED',
    'This write needs an If-Match header with the ETag of the user (REQUIRE_IF_MATCH; `*` is not enough)',
  );

/** The ETag a reply carries, as the OpenAPI document describes it (response `headers`). */
export const etagHeader = {
  ETag: {
    type: 'string',
    description: "The user's version, a strong entity-tag (its updated_at, quoted); it changes with every write",
  },
};

/** 304 of a read whose If-None-Match names the current ETag. */
export const notModifiedReply = {
  type: 'null',
  description: 'Not modified: If-None-Match names the current ETag (or is *); no body',
  headers: etagHeader,
};

const REQUEST_HEADERS = {
  [IF_NONE_MATCH]: 'ETags of copies the client holds, or *: 304 when one is current (weak comparison)',
  [IF_MATCH]:
    'ETags the write may apply to, or * (the user must exist): 412 PRECONDITION_FAILED when none is current (strong comparison)',
  [IF_UNMODIFIED_SINCE]:
    'An HTTP-date, used only without If-Match: 412 PRECONDITION_FAILED when the user changed after it (updated_at, to the second)',
  [IDEMPOTENCY_KEY]:
    'A key of 1 to 255 characters, as a Structured Field String ("…"), unique per create: a repeat with the same key and body gets the first reply, with Idempotent-Replayed: true',
};

/** The conditional request headers each kind of user route takes, as its `headers` schema. */
export function conditionalHeaders(kind: 'read' | 'create' | 'write') {
  const names: (keyof typeof REQUEST_HEADERS)[] =
    kind === 'read' ? [IF_NONE_MATCH] : kind === 'create' ? [IDEMPOTENCY_KEY] : [IF_MATCH, IF_UNMODIFIED_SINCE];
  return {
    type: 'object',
    properties: Object.fromEntries(names.map((name) => [name, { type: 'string', description: REQUEST_HEADERS[name] }])),
  } as const;
}
