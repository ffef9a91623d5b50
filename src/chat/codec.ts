/**
 * The chat's one codec (see web/src/chat-codec.ts). It lives with the browser console's sources
 * because those compile on their own (web/tsconfig.json, DOM and no Node, rootDir web/src) and must
 * load it in the page too; the server, the Redis bus and the terminal client import it from here.
 */
export * from '../../web/src/chat-codec.js';
