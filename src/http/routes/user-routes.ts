/** HTTP binding of the user resource: each route turns a request into one service call and wraps the result. */
import type { FastifyInstance } from 'fastify';
import { successSchema } from '../envelope.js';
import { errorReplies } from '../error-replies.js';
import { ListQuery, User, UserId, UserList, type UserSchemas } from '../../users/schema.js';
import type { IfMatch, UserService } from '../../users/service.js';
import { listReplyJson, userReplyJson } from './user-json.js';
import { JSON_CONTENT_TYPE } from '../../edge/raw-reply.js';
import { DEFAULT_ROLE } from '../../config/roles.js';
import { conditionalHeaders, etagHeader, etagOf, ifMatchOf, notModified, notModifiedReply } from '../conditional.js';
import { idempotentHeaders, type Idempotency } from '../idempotency.js';
import type { SavedReply } from '../../users/idempotency-keys.js';
import { ETAG, LINK } from '../../protocol/http-headers.js';
import { API_PREFIX } from '../prefix.js';
import { documentationOnly } from '../json-body.js';

export interface UserRoutesOptions {
  service: UserService;
  schemas: UserSchemas;
  /** STRICT_VALIDATION: PUT and PATCH can answer 409 (an email held by another user). */
  strict: boolean;
  /** A MAX_USERS cap is in force: POST can answer 507. */
  capped: boolean;
  /** Idempotency-Key on creates (http/idempotency.ts). */
  idempotency: Idempotency;
  /** REQUIRE_IF_MATCH: PUT, PATCH and DELETE without If-Match get 428. */
  requireIfMatch: boolean;
}

type WithId = { Params: { id: string } };

/** The list's Link header, as the OpenAPI document describes it. */
const linkHeader = {
  Link: {
    type: 'string',
    description:
      'When more users follow this page: `<URL>; rel="next"` (RFC 8288), the next page by cursor: this list\'s ' +
      'path with its role, search, sort, order and limit, and `after`. Absent on the last page.',
  },
};

/** The list parameters a next page keeps, as the client sent them; `page` gives way to `after`. */
const KEPT_PARAMETERS = ['role', 'search', 'sort', 'order', 'limit'] as const;

/**
 * The Link header last sent, with the cursor and the kept parameters it was made of. The default list
 * between writes names the same next page on every request, and making the header anew (its URL,
 * the text around it, a new string for Node to copy) was 7 % of that request's instructions
 * (valgrind's callgrind, BENCHMARKS.md "Drift"); comparing six strings is a small part of that.
 */
let lastLink: { after: string; query: Pick<ListQuery, (typeof KEPT_PARAMETERS)[number]>; value: string } | undefined;

/** The Link header naming the page after the cursor `after`, in the same list. */
function nextPageLink(query: ListQuery, after: string): string {
  if (lastLink?.after === after && KEPT_PARAMETERS.every((name) => lastLink!.query[name] === query[name]))
    return lastLink.value;
  const value = `<${nextPageUrl(query, after)}>; rel="next"`;
  const kept: Partial<Record<(typeof KEPT_PARAMETERS)[number], string>> = {};
  for (const name of KEPT_PARAMETERS) if (query[name] !== undefined) kept[name] = query[name];
  lastLink = { after, query: kept, value };
  return value;
}

/** The root-relative URL of the page after the cursor `after`, in the same list. */
function nextPageUrl(query: ListQuery, after: string): string {
  // The default list keeps none: a cursor is base64url and a dot, which URLSearchParams would leave as it is.
  if (KEPT_PARAMETERS.every((name) => query[name] === undefined)) return `${API_PREFIX}/users?after=${after}`;
  const next = new URLSearchParams();
  for (const name of KEPT_PARAMETERS) if (query[name] !== undefined) next.set(name, query[name]);
  next.set('after', after);
  return `${API_PREFIX}/users?${next.toString()}`;
}

const RETRY_AFTER = { type: 'integer', description: 'IDEMPOTENCY_KEY_IN_USE: seconds until the repeat may be sent' };

export async function userRoutes(
  app: FastifyInstance,
  { service, schemas, strict, capped, idempotency, requireIfMatch }: UserRoutesOptions,
): Promise<void> {
  const one = { ...successSchema(User, 'UserEnvelope'), headers: etagHeader };
  const conflict = strict ? ([409] as const) : [];
  const required = requireIfMatch ? ([428] as const) : [];
  const tags = ['users'];

  app.get<{ Querystring: ListQuery }>(
    '/users',
    {
      schema: {
        operationId: 'listUsers',
        summary: 'List users',
        description:
          'List users with role filter, search, sort and pagination, by page number or by cursor (`after`): ' +
          'a page that more users follow names the next one in `Link: <…>; rel="next"`',
        tags,
        querystring: ListQuery,
        response: {
          200: { ...successSchema(UserList, 'UserListEnvelope'), headers: linkHeader },
          ...errorReplies(422),
        },
      },
    },
    // The reply is JSON text already (user-json.ts), sent as it is; the schema above still describes it.
    async (request, reply) => {
      const page = await service.list(request.query);
      if (page.next !== undefined) reply.header(LINK, nextPageLink(request.query, page.next));
      return reply.type(JSON_CONTENT_TYPE).send(listReplyJson('Users retrieved', page));
    },
  );

  app.get<WithId>(
    '/users/:id',
    {
      schema: {
        operationId: 'getUser',
        summary: 'Get a user',
        description: 'Get one user by id',
        tags,
        params: UserId,
        headers: conditionalHeaders('read'),
        response: { 200: one, 304: notModifiedReply, ...errorReplies(404) },
      },
    },
    async (request, reply) => {
      const user = await service.get(request.params.id);
      reply.header(ETAG, etagOf(user));
      if (notModified(request, user)) return reply.code(304).send();
      return reply.type(JSON_CONTENT_TYPE).send(userReplyJson('User retrieved', user));
    },
  );

  app.post(
    '/users',
    {
      schema: {
        operationId: 'createUser',
        summary: 'Create a user',
        description: 'Create a user; the email must not be held by another user (case-insensitive)',
        tags,
        headers: conditionalHeaders('create'),
        body: documentationOnly(schemas.write),
        response: {
          ...errorReplies(409, 413, 415, 422, ...(capped ? ([507] as const) : [])),
          201: { ...one, headers: { ...etagHeader, ...idempotentHeaders } },
          409: { ...errorReplies(409)[409], headers: { ...idempotentHeaders, 'Retry-After': RETRY_AFTER } },
        },
      },
    },
    async (request, reply) =>
      idempotency.handle(request, reply, async (claim) => {
        // With a key, the store keeps this reply with the user (store.ts: Keep): the bytes made there
        // are the ones sent.
        let kept: SavedReply | undefined;
        const replyOf = (user: User): SavedReply =>
          (kept = { status: 201, headers: { [ETAG]: etagOf(user) }, body: userReplyJson('User created', user, false) });
        const user = await service.create(request.body, claim && { claim, replyOf });
        return kept ?? replyOf(user);
      }),
  );

  /** PUT and PATCH: the same preconditions, errors and reply (the user and its new ETag). */
  const write = (
    method: 'PUT' | 'PATCH',
    { body, ...described }: { operationId: string; summary: string; description: string; body: unknown },
    change: (id: string, body: unknown, ifMatch: IfMatch | undefined) => Promise<User>,
  ) =>
    app.route<WithId>({
      method,
      url: '/users/:id',
      schema: {
        ...described,
        tags,
        params: UserId,
        headers: conditionalHeaders('write'),
        body,
        response: { 200: one, ...errorReplies(404, ...conflict, 412, 413, 415, 422, ...required) },
      },
      handler: async (request, reply) => {
        const user = await change(request.params.id, request.body, ifMatchOf(request, requireIfMatch));
        return reply
          .header(ETAG, etagOf(user))
          .type(JSON_CONTENT_TYPE)
          .send(userReplyJson('User updated', user, false));
      },
    });
  write(
    'PUT',
    {
      operationId: 'replaceUser',
      summary: 'Replace a user',
      description: `Replace a user (role resets to "${DEFAULT_ROLE}" when omitted)`,
      body: documentationOnly(schemas.write),
    },
    (id, body, ifMatch) => service.replace(id, body, ifMatch),
  );
  const patched = 'Update some fields of a user';
  write(
    'PATCH',
    { operationId: 'updateUser', summary: patched, description: patched, body: documentationOnly(schemas.patch) },
    (id, body, ifMatch) => service.update(id, body, ifMatch),
  );

  app.delete<WithId>(
    '/users/:id',
    {
      schema: {
        operationId: 'deleteUser',
        summary: 'Delete a user',
        description: 'Delete a user',
        tags,
        params: UserId,
        headers: conditionalHeaders('write'),
        response: { 204: { type: 'null', description: 'Deleted; no body' }, ...errorReplies(404, 412, ...required) },
      },
    },
    async (request, reply) => {
      await service.remove(request.params.id, ifMatchOf(request, requireIfMatch));
      return reply.code(204).send();
    },
  );
}
