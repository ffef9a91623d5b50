/** HTTP binding of the user resource: each route turns a request into one service call and wraps the result. */
import type { FastifyInstance } from 'fastify';
import { success, successSchema } from '../envelope.js';
import { errorReplies } from '../error-replies.js';
import { ListQuery, User, UserId, UserList, type UserSchemas } from '../../users/schema.js';
import type { UserService } from '../../users/service.js';
import { listReplyJson, userReplyJson } from './user-json.js';
import { JSON_CONTENT_TYPE } from '../../edge/raw-reply.js';
import { DEFAULT_ROLE } from '../../config/roles.js';

export interface UserRoutesOptions {
  service: UserService;
  schemas: UserSchemas;
  /** STRICT_VALIDATION: PUT and PATCH can answer 409 (an email held by another user). */
  strict: boolean;
  /** A MAX_USERS cap is in force: POST can answer 507. */
  capped: boolean;
}

type WithId = { Params: { id: string } };

export async function userRoutes(
  app: FastifyInstance,
  { service, schemas, strict, capped }: UserRoutesOptions,
): Promise<void> {
  const one = successSchema(User, 'UserEnvelope');
  const conflict = strict ? ([409] as const) : [];
  const tags = ['users'];

  app.get<{ Querystring: ListQuery }>(
    '/users',
    {
      schema: {
        operationId: 'listUsers',
        summary: 'List users',
        description: 'List users with role filter, search, sort and pagination',
        tags,
        querystring: ListQuery,
        response: { 200: successSchema(UserList, 'UserListEnvelope'), ...errorReplies(422) },
      },
    },
    // The reply is JSON text already (user-json.ts), sent as it is; the schema above still describes it.
    async (request, reply) => {
      const json = listReplyJson('Users retrieved', await service.list(request.query));
      return reply.type(JSON_CONTENT_TYPE).send(json);
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
        response: { 200: one, ...errorReplies(404) },
      },
    },
    async (request, reply) => {
      const json = userReplyJson('User retrieved', await service.get(request.params.id));
      return reply.type(JSON_CONTENT_TYPE).send(json);
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
        body: schemas.write,
        response: { 201: one, ...errorReplies(409, 413, 415, 422, ...(capped ? ([507] as const) : [])) },
      },
    },
    async (request, reply) => reply.code(201).send(success('User created', await service.create(request.body))),
  );

  app.put<WithId>(
    '/users/:id',
    {
      schema: {
        operationId: 'replaceUser',
        summary: 'Replace a user',
        description: `Replace a user (role resets to "${DEFAULT_ROLE}" when omitted)`,
        tags,
        params: UserId,
        body: schemas.write,
        response: { 200: one, ...errorReplies(404, ...conflict, 413, 415, 422) },
      },
    },
    async (request) => success('User updated', await service.replace(request.params.id, request.body)),
  );

  app.patch<WithId>(
    '/users/:id',
    {
      schema: {
        operationId: 'updateUser',
        summary: 'Update some fields of a user',
        description: 'Update some fields of a user',
        tags,
        params: UserId,
        body: schemas.patch,
        response: { 200: one, ...errorReplies(404, ...conflict, 413, 415, 422) },
      },
    },
    async (request) => success('User updated', await service.update(request.params.id, request.body)),
  );

  const deleted = { 204: { type: 'null', description: 'Deleted; no body' }, ...errorReplies(404) };
  app.delete<WithId>(
    '/users/:id',
    {
      schema: {
        operationId: 'deleteUser',
        summary: 'Delete a user',
        description: 'Delete a user',
        tags,
        params: UserId,
        response: deleted,
      },
    },
    async (request, reply) => {
      await service.remove(request.params.id);
      return reply.code(204).send();
    },
  );
}
