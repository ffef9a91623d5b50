/**
 * The checks of a chat handshake before ws sees it: the shape RFC 6455 asks for, the door's protection
 * (origin, rate limit, credentials, in the REST port's order), and the refusal of one that fails,
 * written in the error envelope.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { writeRawError } from '../edge/raw-reply.js';
import { RosterError, type ErrorCode } from '../errors.js';
import type { RateLimit } from '../config/index.js';
import { credentialsOf, type Authenticator, type Principal } from '../edge/authenticator.js';
import { clientKey } from '../edge/client-identity.js';
import { originAllowed } from '../edge/origins.js';
import type { RateLimiter } from '../edge/rate-limiter.js';

export function isWebSocketUpgrade(request: IncomingMessage): boolean {
  return (
    request.method === 'GET' &&
    request.httpVersion === '1.1' && // RFC 6455 4.1: HTTP/1.1 or higher; Node's server speaks at most 1.1 here
    request.headers.upgrade?.toLowerCase() === 'websocket' &&
    // RFC 6455 4.2.1: the key is 16 random bytes in base64. Checked here so the refusal is in the
    // envelope (ws would answer with an HTML body).
    /^[+/0-9A-Za-z]{22}==$/.test(request.headers['sec-websocket-key'] ?? '')
  );
}

/** Refuses a handshake with an HTTP reply in the error envelope, then closes the socket. */
export function refuse(socket: Duplex, code: ErrorCode, message: string, headers?: Record<string, string>): void {
  writeRawError(socket, new RosterError(code, message, headers && { headers }));
}

/** What a handshake asks of the rate limiter. */
export type HandshakeLimiter = Pick<RateLimiter, 'spent' | 'refusal'>;

/** What protects the chat door; every part optional and off unless configured (config/). */
export interface ChatProtection {
  /** TLS_CERT / TLS_KEY: the port speaks WSS. */
  tls?: { cert: Buffer; key: Buffer; ciphers?: string } | undefined;
  /** CORS_ORIGINS: a handshake whose Origin is not listed gets 403 (none at all is a non-browser client: allowed). */
  origins?: readonly string[] | undefined;
  /**
   * The REST port bound (the console's). With AUTH on and no CORS_ORIGINS, a browser handshake must
   * come from it, or from the chat's own origin: 403 otherwise (protection.ts, originAllowed).
   */
  restPort?: (() => number) | undefined;
  /** AUTH: the handshake must carry a credential (header, or api_key / access_token in the URL); 401 otherwise. */
  authenticator?: Authenticator | undefined;
  /**
   * RATE_LIMIT for handshakes, by client key: each method resolves with the 429 to send, or undefined
   * to go on. The one limiter of both doors, asked across threads (worker.ts).
   */
  limiter?: HandshakeLimiter | undefined;
  /** RATE_LIMIT for messages, per client: one MessageBudget shared by all its connections. */
  messageLimit?: RateLimit | undefined;
  /** The client's address, X-Forwarded-For believed as TRUST_PROXY says. */
  addressOf?: ((request: IncomingMessage) => string) | undefined;
  /** TRUST_PROXY's proxies among TCP peers: exempt from MAX_CONNECTIONS_PER_ADDRESS (edge/connection-guard.ts). */
  trustedPeer?: ((address: string) => boolean) | undefined;
}

/**
 * The protection of a handshake, in the REST port's order (http/protection.ts): Origin (403); 429
 * while the address has nothing left of its budget (the one its REST requests spend too), before any
 * credential is looked at (a right password must not be told from a wrong one by the reply);
 * credentials, recorded, a password counted against the address's REST budget before it is hashed;
 * the rate limit (429) per principal or address; then the credentials' 401.
 */
export function admission(
  protection: ChatProtection,
  addressOf: (request: IncomingMessage) => string,
): (request: IncomingMessage) => Promise<Principal | undefined | RosterError> {
  const { origins, authenticator, limiter } = protection;
  // One budget per client on both doors (http/protection.ts keys its requests the same way):
  // RATE_LIMIT=3/minute allows three in all, not three on each port.
  const addressKey = (address: string) => clientKey(undefined, address);
  return async (request) => {
    const origin = request.headers.origin;
    const own =
      authenticator && protection.restPort
        ? { host: request.headers.host, restPort: protection.restPort() }
        : undefined;
    if (!originAllowed(origins, origin, own))
      return new RosterError('FORBIDDEN', 'This origin may not connect to the chat');
    const address = addressOf(request);
    const spent = limiter ? await limiter.spent(addressKey(address)) : undefined;
    if (spent) return spent;
    let principal: Principal | undefined;
    let failure: unknown;
    let charged = false;
    if (authenticator) {
      const charge = async () => {
        const limited = await limiter?.refusal(addressKey(address));
        if (limited) throw limited;
        charged = limiter !== undefined;
      };
      try {
        principal = await authenticator.authenticate(
          credentialsOf(request.headers, request.url ?? '', { accessToken: true }),
          charge,
        );
      } catch (error) {
        failure = error;
      }
    }
    // A refused password was counted before its hashing (charge); anything else is counted now.
    const counted = charged && !principal;
    const limited = limiter && !counted ? await limiter.refusal(clientKey(principal, address)) : undefined;
    if (limited) return limited;
    if (failure !== undefined) {
      if (failure instanceof RosterError) return failure;
      throw failure;
    }
    return principal;
  };
}
