/** The success envelope of the contract, as a schema (for serialization and docs) and as a value. */
import { Type, type TSchema } from 'typebox';

export function successSchema(data?: TSchema) {
  return Type.Object({
    status: Type.Literal('success'),
    message: Type.String(),
    ...(data ? { data } : {}),
  });
}

export function success<T>(message: string, data: T): { status: 'success'; message: string; data: T } {
  return { status: 'success', message, data };
}
