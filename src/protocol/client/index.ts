/**
 * Roster's typed client: the REST API (openapi-fetch over the types generated from the OpenAPI
 * document) and the chat (the codec over the types generated from the AsyncAPI document). The browser
 * console and the `roster` command both use it, the change feed too (changes.ts); `import … from 'roster/client'` outside.
 */
export * from './rest.js';
export * from './changes.js';
export * from './chat-client.js';
export * from './retry.js';
export * from './user-fields.js';
export * from '../http-headers.js';
