/**
 * Benchmark child: the Fastify floor, a bare Fastify app over a Map of the benchmark's users. It
 * answers health and get by id only, declared as Roster declares them (the same params and response
 * schemas, so fast-json-stringify serialises the same way), and nothing else: no logger, no hooks, no
 * plugins, no error handling of its own. What Roster loses against node:http beyond this is Roster's.
 */
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { Type } from 'typebox';
import { timestamp } from '../../src/clock.js';
import { success, successSchema } from '../../src/http/envelope.js';
import { User, UserId } from '../../src/users/schema.js';
import { answerParent, measureFill, memoryNow } from '../ipc.js';
import { benchUser } from '../users.js';
import type { HttpBaselineStarted } from './http-baseline.js';

export type FastifyFloorCommand = { cmd: 'start'; users: number } | { cmd: 'memory' };

/** Roster's health data without the engine checks, which a single process without engines never sends. */
const HealthData = Type.Object({ status: Type.Literal('healthy'), timestamp: Type.String() });

const users = new Map<string, User>();

answerParent<FastifyFloorCommand>(async (command) => {
  if (command.cmd === 'memory') return memoryNow();
  const fill = await measureFill(() => {
    for (let index = 0; index < command.users; index++) {
      const user = benchUser(index);
      users.set(user.id, user);
    }
  });
  // The idle timeout Roster and the node:http baseline use; Fastify's default (72 s) is the same.
  const app = Fastify({ logger: false, keepAliveTimeout: 72_000 });
  app.get('/api/v1/health', { schema: { response: { 200: successSchema(HealthData) } } }, async () =>
    success('Service is healthy', { status: 'healthy' as const, timestamp: timestamp() }),
  );
  app.get<{ Params: { id: string } }>(
    '/api/v1/users/:id',
    { schema: { params: UserId, response: { 200: successSchema(User) } } },
    async (request, reply) => {
      const user = users.get(request.params.id);
      if (user) return success('User retrieved', user);
      return reply.code(404).send({ status: 'error', error: { code: 'USER_NOT_FOUND', message: 'User not found' } });
    },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const result: HttpBaselineStarted = { port: (app.server.address() as AddressInfo).port, ...fill };
  return result;
});
