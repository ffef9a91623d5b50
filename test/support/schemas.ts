/**
 * Each chat server message's JSON Schema, as the AsyncAPI document publishes it (src/protocol/chat-messages.ts):
 * the chat clients of the kit check every frame they receive against it, so the document cannot drift
 * from the wire.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CHAT_MESSAGES, SERVER_MESSAGE_BY_TYPE } from '../../src/protocol/chat-messages.js';

const frameAjv = new Ajv2020({ strict: true, allErrors: true });
const validateFrame = Object.fromEntries(
  Object.entries(SERVER_MESSAGE_BY_TYPE).map(([type, key]) => [type, frameAjv.compile(CHAT_MESSAGES[key].payload)]),
);

/** Why `message` is not a server message of the AsyncAPI document, or undefined when it is one. */
export function frameProblem(message: unknown): string | undefined {
  const type = (message as { type?: unknown } | null)?.type;
  const validate = typeof type === 'string' ? validateFrame[type] : undefined;
  if (!validate) return `no server message has type ${JSON.stringify(type)}`;
  return validate(message) ? undefined : frameAjv.errorsText(validate.errors);
}
