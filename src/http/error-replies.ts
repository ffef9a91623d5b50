/**
 * The error replies as the OpenAPI document describes them: one `ErrorEnvelope` per status, naming the
 * codes of the catalog (src/errors.ts) that status carries, with an example of each.
 */
import { Type } from 'typebox';
import { codesOf, ERROR_CATALOG, type ErrorCode, type ErrorStatus } from '../errors.js';
import { FIELD_RULES } from '../users/schema.js';

/** Every code, for the document's components: what a client generator turns into one enum. */
const ERROR_CODE_SCHEMA = {
  title: 'ErrorCode',
  type: 'string' as const,
  enum: Object.keys(ERROR_CATALOG),
  description:
    'Machine-readable error code, one of the error catalog (src/errors.ts):\n' +
    (Object.keys(ERROR_CATALOG) as ErrorCode[])
      .map((code) => `${code} (${ERROR_CATALOG[code].status}): ${ERROR_CATALOG[code].meaning}`)
      .join('\n'),
};

/** The error envelope of the contract (one schema, `ErrorEnvelope`), described for one status: its codes and examples. */
function errorEnvelope(status: ErrorStatus) {
  const codes = codesOf(status);
  return Type.Object(
    {
      status: Type.Literal('error'),
      error: Type.Object(
        {
          code: Type.Unsafe<ErrorCode>(ERROR_CODE_SCHEMA),
          message: Type.String({ description: 'What went wrong, for people' }),
          details: Type.Optional(
            Type.Array(Type.Object({ field: Type.String(), message: Type.String() }, { title: 'FieldDetail' }), {
              description: 'One entry per invalid field or parameter',
            }),
          ),
        },
        { title: 'ErrorBody' },
      ),
    },
    {
      title: 'ErrorEnvelope',
      description: codes.map((code) => `${code}: ${ERROR_CATALOG[code].meaning}`).join('. '),
      examples: codes.map((code) => ({
        status: 'error',
        error: {
          code,
          message: ERROR_CATALOG[code].example,
          ...(code === 'VALIDATION_ERROR' ? { details: [VALIDATION_DETAIL] } : {}),
        },
      })),
    },
  );
}

const VALIDATION_DETAIL = { field: 'email', message: FIELD_RULES.email };

/** Every status the catalog knows, by the error reply it documents. */
const ERRORS = Object.fromEntries(
  [...new Set(Object.values(ERROR_CATALOG).map((entry) => entry.status))].map((status) => [
    status,
    errorEnvelope(status),
  ]),
) as Record<ErrorStatus, ReturnType<typeof errorEnvelope>>;

/**
 * The `response` entries for the error replies an operation can give: 400 (a malformed URL, a missing
 * Host) and 500 are always possible.
 */
export function errorReplies(
  ...statuses: ErrorStatus[]
): Partial<Record<ErrorStatus, ReturnType<typeof errorEnvelope>>> {
  return Object.fromEntries([400 as const, ...statuses, 500 as const].map((status) => [status, ERRORS[status]]));
}
