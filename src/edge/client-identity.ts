/**
 * Who a client is, the same way on both doors: its address as TRUST_PROXY lets X-Forwarded-For tell it
 * (Fastify's request.ip on the REST port, `addressOf` for chat handshakes, one rule: @fastify/proxy-addr),
 * and the key its limits are counted under.
 */
import proxyAddr from '@fastify/proxy-addr';
import type { IncomingMessage } from 'node:http';
import type { Principal } from './authenticator.js';

/**
 * The rate-limit key of a client: its principal when authenticated (by its id, never its display
 * name), else its address (TRUST_PROXY decides which).
 */
export function clientKey(principal: Principal | null | undefined, address: string): string {
  return principal ? `principal:${principal.scheme}:${principal.id}` : `address:${address}`;
}

/** TRUST_PROXY as a hop count: the nearest `hops` addresses of X-Forwarded-For are proxies. */
export function hopsTrusted(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/**
 * Whether a peer (the TCP connection's own address) is a trusted proxy, exempt from
 * MAX_CONNECTIONS_PER_ADDRESS: only one that TRUST_PROXY names in a list. `true` and a hop count say
 * how far to believe X-Forwarded-For, not who the proxy is: under them any peer, a client that reaches
 * the port directly included, would pass for one, so none is exempt (SECURITY.md).
 */
export function trustedPeer(trust: boolean | number | readonly string[]): (address: string) => boolean {
  if (typeof trust !== 'object') return () => false;
  const trusted = proxyAddr.compile([...trust]);
  return (address) => trusted(address, 0);
}

/** The client address of a handshake as Fastify computes request.ip for the same TRUST_PROXY. */
export function addressOf(trust: true | number | readonly string[]): (request: IncomingMessage) => string {
  const trusted =
    trust === true ? () => true : typeof trust === 'number' ? hopsTrusted(trust) : proxyAddr.compile([...trust]);
  return (request) => proxyAddr(request, trusted);
}
