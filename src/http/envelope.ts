/** The success envelope of the contract, as a schema (for serialization and docs) and as a value. */
import { Type, type TSchema } from 'typebox';

/** `title` names it as a component of the OpenAPI document (openapi.ts), e.g. `UserEnvelope`. */
export function successSchema(data?: TSchema, title?: string) {
  return Type.Object(
    {
      status: Type.Literal('success'),
      message: Type.String({ description: 'What was done, for people' }),
      ...(data ? { data } : {}),
    },
    title ? { title } : {},
  );
}

export function success<T>(message: string, data: T): { status: 'success'; message: string; data: T } {
  return { status: 'success', message, data };
}
