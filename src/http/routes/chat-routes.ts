/**
 * Who is online: the chat room's members across every instance (with REDIS_URL, from the member lists
 * the instances share; else this process's room), read-only, paginated as the user list is. The chat
 * door hands the list in (server.ts): this door never imports it.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { serviceUnavailable } from '../../errors.js';
import { ListQuery, Pagination } from '../../users/schema.js';
import { DEFAULT_LIMIT, DEFAULT_PAGE } from '../../users/service.js';
import { success, successSchema } from '../envelope.js';
import { errorReplies } from '../error-replies.js';

/** One member as the list shows it. */
export interface ChatMemberJson {
  id: string;
  name?: string;
  connected_at: string;
}

export interface ChatRoutesOptions {
  /** The members of the whole room, by when they joined; rejects when they cannot be read (Redis away). */
  members: () => Promise<ChatMemberJson[]>;
  maxPageSize: number;
}

const MembersQuery = Type.Pick(ListQuery, ['page', 'limit']);

const ChatMember = Type.Object(
  {
    id: Type.String({ description: 'The connection id: the `from` of its chat messages' }),
    name: Type.Optional(Type.String({ description: 'The authenticated principal, when AUTH is on' })),
    connected_at: Type.String({ description: 'When it joined: UTC, ISO 8601 without offset, microseconds' }),
  },
  { title: 'ChatMember' },
);

const MemberList = Type.Object(
  {
    members: Type.Array(ChatMember),
    pagination: Type.Object(
      { ...Pagination.properties, total: Type.Integer({ description: 'Members of the room, on every instance' }) },
      { title: 'ChatMemberPagination' },
    ),
  },
  { title: 'ChatMemberList' },
);

export async function chatRoutes(app: FastifyInstance, { members, maxPageSize }: ChatRoutesOptions): Promise<void> {
  app.get<{ Querystring: { page?: string; limit?: string } }>(
    '/chat/members',
    {
      schema: {
        operationId: 'listChatMembers',
        summary: 'List who is in the chat room',
        description:
          'Who is in the chat room now, on every instance, oldest connection first; paginated like the user list',
        tags: ['chat'],
        querystring: MembersQuery,
        response: { 200: successSchema(MemberList, 'ChatMemberListEnvelope'), ...errorReplies(422, 503) },
      },
    },
    async (request) => {
      const page = request.query.page === undefined ? DEFAULT_PAGE : Number(request.query.page);
      const limit = Math.min(
        request.query.limit === undefined ? DEFAULT_LIMIT : Number(request.query.limit),
        maxPageSize,
      );
      const all = await members().catch((): never => {
        throw serviceUnavailable('The chat’s member list cannot be read: the chat bus (Redis) is down');
      });
      const total = all.length;
      const start = Math.min((page - 1) * limit, total);
      return success('Chat members retrieved', {
        members: all.slice(start, start + limit),
        pagination: { total, page, limit, pages: Math.ceil(total / limit) },
      });
    },
  );
}
