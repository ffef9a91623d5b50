/**
 * The protocol as its clients use it, in one module. The browser console imports it by the bare name
 * `@roster/protocol` (its import map, CONSOLE_IMPORT_MAP of src/http/console.ts), so the page needs one
 * entry in the map however the folder is split. The message schemas (chat-messages.ts) are left out:
 * they describe the protocol for the AsyncAPI document and the tests, and no client reads them.
 */
export * from './backoff.js';
export * from './chat-codec.js';
export * from './reconnecting-chat.js';
export * from './sender-id.js';
export * from './client/index.js';
