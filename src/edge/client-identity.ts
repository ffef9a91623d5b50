/**
 * Who a client is, the same way on both doors: its address as TRUST_PROXY lets X-Forwarded-For tell it
 * (Fastify's request.ip on the REST port, `addressOf` for chat handshakes, one rule: @fastify/proxy-addr),
 * and the key its limits are counted under.
 */
import proxyAddr from '@fastify/proxy-addr';
import type { IncomingMessage } from 'node:http';
import type { Principal } from './authenticator.js';

/** The rate-limit key of a client: its principal when authenticated, else its address (TRUST_PROXY decides which). */
export function clientKey(principal: Principal | null | undefined, address: string): string {
  return principal ? `principal:${principal.scheme}:${principal.name}` : `address:${address}`;
}

/** TRUST_PROXY as a hop count: the nearest `hops` addresses of X-Forwarded-For are proxies. */
export function hopsTrusted(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/** The client address of a handshake as Fastify computes request.ip for the same TRUST_PROXY. */
export function addressOf(trust: true | number | readonly string[]): (request: IncomingMessage) => string {
  const trusted =
    trust === true ? () => true : typeof trust === 'number' ? hopsTrusted(trust) : proxyAddr.compile([...trust]);
  return (request) => proxyAddr(request, trusted);
}
