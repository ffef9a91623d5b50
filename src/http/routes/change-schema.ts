/**
 * The change feed's query and page, as schemas: they validate the query and describe both in the
 * OpenAPI document. `since` and `wait` are checked by hand in change-routes.ts, for messages that
 * name what they must be (a pattern's failure reads "must be a positive integer").
 */
import { Type } from 'typebox';
import { User } from '../../users/schema.js';

export const CHANGES_DEFAULT_LIMIT = 100;
export const CHANGES_MAX_LIMIT = 1000;
export const WAIT_MAX_SECONDS = 60;

export const changesQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      description:
        "The cursor to read after (`<epoch>.<seq>`, from `next`, a change's `cursor` or an event id); absent: from now on",
    }),
  ),
  limit: Type.Optional(
    Type.String({
      pattern: '^0*[1-9][0-9]*$',
      description: `Changes per page (default ${CHANGES_DEFAULT_LIMIT}), clamped to ${CHANGES_MAX_LIMIT}`,
    }),
  ),
  wait: Type.Optional(
    Type.String({
      description: `JSON only: seconds (0 to ${WAIT_MAX_SECONDS}) to wait for a change when there is none yet (long poll)`,
    }),
  ),
  role: Type.Optional(
    Type.String({ description: 'Keep changes of users whose role before or after the change is this' }),
  ),
  id: Type.Optional(Type.String({ description: 'Keep changes of this one user' })),
});

export const Change = Type.Object(
  {
    seq: Type.Integer({ description: 'Its number in the log: greater than every change before it in this epoch' }),
    cursor: Type.String({ description: 'Where to read on from: `<epoch>.<seq>`; the event id of a stream' }),
    type: Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('deleted')]),
    id: Type.String({ description: "The user's id" }),
    user: Type.Union([User, Type.Null()], {
      description: 'The user as written (as GET /users/{id} has it); null for a delete',
    }),
    etag: Type.Union([Type.String(), Type.Null()], {
      description: "The user's ETag after the change; null for a delete",
    }),
    at: Type.String({ description: 'When (UTC, ISO 8601 without offset, as `updated_at`)' }),
  },
  { title: 'Change' },
);

export const ChangePage = Type.Object(
  {
    data: Type.Array(Change, { description: 'The changes after `since`, oldest first' }),
    next: Type.String({ description: 'The cursor to pass as `since` next time' }),
  },
  { title: 'ChangePage' },
);
