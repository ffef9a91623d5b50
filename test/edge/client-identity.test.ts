/**
 * Client identity (edge/client-identity.ts), as tables: the key a client's limits are counted under,
 * and a handshake's address as TRUST_PROXY lets X-Forwarded-For tell it.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import type { Principal } from '../../src/edge/authenticator.js';
import { addressOf, clientKey, hopsTrusted, trustedPeer } from '../../src/edge/client-identity.js';

/** A principal whose id is `id` and whose display name is `name` (the id unless given). */
const principal = (id: string, scheme: Principal['scheme'], name = id): Principal => ({
  id,
  name,
  role: 'user',
  scheme,
});

describe('clientKey', () => {
  const cases: [name: string, who: Principal | null | undefined, address: string, expected: string][] = [
    ['no principal: the address', undefined, '203.0.113.7', 'address:203.0.113.7'],
    ['a null principal: the address', null, '::1', 'address:::1'],
    ['an API key', principal('api-key-1', 'apikey'), '203.0.113.7', 'principal:apikey:api-key-1'],
    ['a Basic user', principal('ada', 'basic'), '203.0.113.7', 'principal:basic:ada'],
    [
      'a token',
      principal('["https://idp.example/","u-1"]', 'jwt', 'Ada'),
      '198.51.100.1',
      'principal:jwt:["https://idp.example/","u-1"]',
    ],
  ];
  for (const [name, who, address, expected] of cases) {
    test(`${name}: ${expected}`, () => assert.equal(clientKey(who, address), expected));
  }

  test('one name under two schemes, and a name that looks like an address, are distinct keys', () => {
    const keys = [
      clientKey(principal('ada', 'basic'), 'x'),
      clientKey(principal('ada', 'jwt'), 'x'),
      clientKey(principal('203.0.113.7', 'basic'), 'x'),
      clientKey(undefined, '203.0.113.7'),
    ];
    assert.equal(new Set(keys).size, keys.length);
  });

  test('the key is the id, never the display name: two tokens named alike count apart, one renamed counts alike', () => {
    assert.notEqual(
      clientKey(principal('["","attacker"]', 'jwt', 'Victim'), 'x'),
      clientKey(principal('["","victim"]', 'jwt', 'Victim'), 'x'),
    );
    assert.equal(
      clientKey(principal('["","victim"]', 'jwt', 'Old'), 'x'),
      clientKey(principal('["","victim"]', 'jwt', 'New'), 'x'),
    );
  });
});

describe('trustedPeer: which TCP peers are proxies (exempt from MAX_CONNECTIONS_PER_ADDRESS)', () => {
  const cases: [trust: boolean | number | string[], peer: string, expected: boolean][] = [
    [false, '127.0.0.1', false],
    // `true` and hop counts name no proxy: every peer could pass for one, so none is exempt.
    [true, '203.0.113.7', false],
    [true, '127.0.0.1', false],
    [0, '127.0.0.1', false],
    [1, '203.0.113.7', false],
    [2, '127.0.0.1', false],
    [['127.0.0.1'], '127.0.0.1', true],
    [['127.0.0.1'], '127.0.0.2', false],
    [['10.0.0.0/8'], '10.1.2.3', true],
    [['10.0.0.0/8'], '::ffff:10.1.2.3', true],
    [['10.0.0.0/8'], '11.0.0.1', false],
  ];
  for (const [trust, peer, expected] of cases) {
    test(`TRUST_PROXY=${JSON.stringify(trust)}: ${peer} is ${expected ? '' : 'not '}trusted`, () =>
      assert.equal(trustedPeer(trust)(peer), expected));
  }
});

describe('hopsTrusted', () => {
  const cases: [hops: number, hop: number, expected: boolean][] = [
    [0, 0, false],
    [1, 0, true],
    [1, 1, false],
    [2, 1, true],
    [2, 2, false],
  ];
  for (const [hops, hop, expected] of cases) {
    test(`${hops} hops: hop ${hop} is ${expected ? '' : 'not '}a proxy`, () =>
      assert.equal(hopsTrusted(hops)('203.0.113.7', hop), expected));
  }
});

/** A handshake from `peer` with the given X-Forwarded-For. */
function handshake(peer: string, forwarded?: string): IncomingMessage {
  return {
    headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
    socket: { remoteAddress: peer },
  } as unknown as IncomingMessage;
}

describe('addressOf', () => {
  const XFF = '203.0.113.7, 198.51.100.2, 10.0.0.5';
  const cases: [
    name: string,
    trust: true | number | readonly string[],
    peer: string,
    forwarded: string | undefined,
    expected: string,
  ][] = [
    ['trust everyone: the first address', true, '127.0.0.1', XFF, '203.0.113.7'],
    ['trust everyone, no header: the peer', true, '127.0.0.1', undefined, '127.0.0.1'],
    ['0 hops: the peer, whatever the header says', 0, '127.0.0.1', XFF, '127.0.0.1'],
    ['1 hop: the last forwarded address', 1, '127.0.0.1', XFF, '10.0.0.5'],
    ['2 hops', 2, '127.0.0.1', XFF, '198.51.100.2'],
    ['more hops than addresses: the first', 9, '127.0.0.1', XFF, '203.0.113.7'],
    ['a trusted proxy address: the next address', ['127.0.0.1'], '127.0.0.1', XFF, '10.0.0.5'],
    ['trusted proxies by CIDR: past every trusted one', ['127.0.0.1', '10.0.0.0/8'], '127.0.0.1', XFF, '198.51.100.2'],
    ['a peer that is not a trusted proxy: the peer', ['10.0.0.0/8'], '192.0.2.1', XFF, '192.0.2.1'],
    ['an empty list: the peer', [], '127.0.0.1', XFF, '127.0.0.1'],
  ];
  for (const [name, trust, peer, forwarded, expected] of cases) {
    test(`${name}: ${expected}`, () => assert.equal(addressOf(trust)(handshake(peer, forwarded)), expected));
  }
});
