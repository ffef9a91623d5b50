/**
 * The origin policy of both doors' browser clients: which pages may open the chat in a user's name
 * (CORS for the REST port is @fastify/cors, configured from the same CORS_ORIGINS in http/protection.ts).
 */

/**
 * Whether a chat handshake's Origin may connect. Non-browser clients (no Origin) always may. With
 * CORS_ORIGINS, the listed origins. Without, and with AUTH on (`own` given), only Roster's own pages: a
 * browser carries credentials a foreign page must not use (Basic credentials it cached, say), so a page
 * on another port or host must not open the chat in the user's name (cross-site WebSocket hijacking).
 * Without either, any origin, as the contract has it.
 */
export function originAllowed(
  origins: readonly string[] | undefined,
  origin: string | undefined,
  own?: { host: string | undefined; restPort: number },
): boolean {
  if (origin === undefined) return true;
  if (origins !== undefined) return origins.includes('*') || origins.includes(origin);
  return own === undefined || isOwnOrigin(origin, own.host, own.restPort);
}

/**
 * Roster's own pages, as the handshake's Host header names the server: the REST port on the same host
 * name (the console, `http(s)://host:PORT`), or the chat's own address (the console behind a proxy
 * that serves both on one origin, CHAT_PUBLIC_URL=/chat). The scheme is not compared: behind a proxy
 * that ends TLS, the page is https while Roster speaks plain HTTP; the host and port decide.
 */
function isOwnOrigin(origin: string, host: string | undefined, restPort: number): boolean {
  if (host === undefined) return false;
  const page = URL.parse(origin);
  const chat = URL.parse(`http://${host}`);
  if (page === null || chat === null || page.hostname !== chat.hostname) return false;
  const pagePort = page.port === '' ? (page.protocol === 'https:' ? '443' : '80') : page.port;
  return pagePort === String(restPort) || page.host === chat.host;
}
