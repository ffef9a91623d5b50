/** HTTP binding of the user resource: each route turns a request into one service call and wraps the result. */
import type { FastifyInstance } from 'fastify';
import { success, successSchema } from '../http/envelope.js';
import { ListQuery, User, UserId, UserList, type UserSchemas } from './schema.js';
import type { UserService } from './service.js';

export interface UserRoutesOptions {
  service: UserService;
  schemas: UserSchemas;
}

type WithId = { Params: { id: string } };

export async function userRoutes(app: FastifyInstance, { service, schemas }: UserRoutesOptions): Promise<void> {
  const one = { 200: successSchema(User) };

  app.get<{ Querystring: ListQuery }>(
    '/users',
    {
      schema: {
        description: 'List users with role filter, search, sort and pagination',
        querystring: ListQuery,
        response: { 200: successSchema(UserList) },
      },
    },
    async (request) => success('Users retrieved', await service.list(request.query)),
  );

  app.get<WithId>('/users/:id', { schema: { description: 'Get one user by id', params: UserId, response: one } }, async (request) =>
    success('User retrieved', await service.get(request.params.id)),
  );

  app.post(
    '/users',
    { schema: { description: 'Create a user; the email must not be held by another user (case-insensitive)', body: schemas.write, response: { 201: successSchema(User) } } },
    async (request, reply) => reply.code(201).send(success('User created', await service.create(request.body))),
  );

  app.put<WithId>(
    '/users/:id',
    { schema: { description: 'Replace a user (role resets to "user" when omitted)', params: UserId, body: schemas.write, response: one } },
    async (request) => success('User updated', await service.replace(request.params.id, request.body)),
  );

  app.patch<WithId>(
    '/users/:id',
    { schema: { description: 'Update some fields of a user', params: UserId, body: schemas.patch, response: one } },
    async (request) => success('User updated', await service.update(request.params.id, request.body)),
  );

  app.delete<WithId>('/users/:id', { schema: { description: 'Delete a user', params: UserId } }, async (request, reply) => {
    await service.remove(request.params.id);
    return reply.code(204).send();
  });
}
