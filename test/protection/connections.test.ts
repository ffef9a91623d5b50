/**
 * One client cannot hold the ports (docs/decisions.md, "Protection": *Connections before any request*,
 * and the one budget of *Rate limiting before credentials*), tried as an attacker would, over real
 * sockets on loopback. Linux routes all of 127.0.0.0/8 to the loopback interface, so a socket bound to
 * 127.0.0.2 is a second client address.
 *
 * - Sockets that never finish their headers: past MAX_CONNECTIONS_PER_ADDRESS (by default 256, at most
 *   a quarter of the port's own cap) an
 *   address's further connections are dropped on accept, on the REST port and on the chat port, and
 *   another address is served. Trusted proxies are exempt.
 * - A socket that sends nothing is closed after FIRST_BYTE_TIMEOUT_MS, long before HEADERS_TIMEOUT_MS.
 * - Limits are keyed by a token's issuer and subject, never by its display name.
 * - A password guess costs from one budget on both doors.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import {
  assertRefused,
  basic,
  handshake,
  request,
  SECRET,
  startRoster,
  token,
  within,
  type Running,
} from '../support/index.js';
import { hashPassword } from '../../src/edge/password.js';

const OTHER_ADDRESS = '127.0.0.2';

/** A TCP connection to `url`'s port from `localAddress`, open (connected) when it resolves. */
async function socketTo(url: string, localAddress = '127.0.0.1'): Promise<Socket> {
  const { port } = new URL(url);
  const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress });
  socket.on('error', () => {});
  // Errors are ignored above: a refused connection would never emit 'connect'.
  await within(once(socket, 'connect'), 5000, `a connection to ${url}`);
  return socket;
}

/** Whether the server ended `socket` within `ms` (closed by the peer, with nothing written back). */
async function endedWithin(socket: Socket, ms: number): Promise<{ ended: boolean; received: string }> {
  let received = '';
  socket.on('data', (chunk) => (received += String(chunk)));
  if (socket.destroyed) return { ended: true, received };
  const ended = await Promise.race([
    once(socket, 'close').then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);
  return { ended, received };
}

/**
 * Roster with `env`, stopped when the test ends, after the sockets the test opened are closed (a
 * stop waits for open connections).
 */
async function roster(t: TestContext, env: Record<string, string>): Promise<{ running: Running; sockets: Socket[] }> {
  const running = await startRoster(env);
  const sockets: Socket[] = [];
  t.after(async () => {
    sockets.forEach((socket) => socket.destroy());
    await running.stop();
  });
  return { running, sockets };
}

/** `count` sockets from 127.0.0.1 that each send an unfinished request line, as in the report. */
async function holdSlots(sockets: Socket[], url: string, count: number, bytes = 'GET / HT'): Promise<void> {
  for (let i = 0; i < count; i++) {
    const socket = await socketTo(url);
    if (bytes) socket.write(bytes);
    sockets.push(socket);
  }
}

/** A plain GET over a socket from `localAddress`: the status line, or undefined if the connection was cut. */
async function getFrom(url: string, localAddress: string): Promise<string | undefined> {
  const target = new URL(url);
  const socket = await socketTo(url, localAddress);
  socket.write(`GET ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: close\r\n\r\n`);
  const { received } = await endedWithin(socket, 5000);
  socket.destroy();
  return received.split('\r\n')[0] || undefined;
}

/** A counter's value for one reason on /metrics (0 when absent). */
async function refused(running: Running, port: 'http' | 'chat', reason: string): Promise<number> {
  const text = await (await fetch(`${running.origin}/metrics`)).text();
  const series = `roster_${port}_connections_refused_total{reason="${reason}"} `;
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? 0 : Number(line.slice(series.length));
}

describe('MAX_CONNECTIONS_PER_ADDRESS: one address cannot hold every slot', () => {
  test('REST port, the defaults with AUTH and RATE_LIMIT: a quarter of MAX_CONNECTIONS from one address, the next dropped, another address served', async (t) => {
    // MAX_CONNECTIONS=300: the per-address default is 75, not 256, which would let one address fill the port.
    const { running, sockets } = await roster(t, {
      AUTH: 'apikey',
      API_KEYS: 'k3y-0123456789abcdef',
      RATE_LIMIT: '100/minute',
      MAX_CONNECTIONS: '300',
    });
    await holdSlots(sockets, running.origin, 75);
    const extra = await socketTo(running.origin);
    sockets.push(extra);
    extra.write('GET / HT');
    const dropped = await endedWithin(extra, 2000);
    assert.equal(dropped.ended, true, 'the 76th connection of one address is dropped');
    assert.equal(dropped.received, '', 'dropped on accept, with nothing written');
    await holdSlots(sockets, running.origin, 224); // and so is every other, up to MAX_CONNECTIONS
    const served = await getFrom(`${running.origin}/livez`, OTHER_ADDRESS);
    assert.equal(served, 'HTTP/1.1 200 OK', 'another address is served while the first holds its 75');
    // Metrics are read from 127.0.0.1 too, once its sockets are gone (the server sees them close soon after).
    sockets.splice(0).forEach((socket) => socket.destroy());
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(await refused(running, 'http', 'per_address'), 225);
  });

  test('chat port, the default: a quarter of WS_MAX_CONNECTIONS from one address, another address served', async (t) => {
    const { running, sockets } = await roster(t, { WS_MAX_CONNECTIONS: '40' });
    await holdSlots(sockets, running.wsUrl, 10, '');
    const extra = await socketTo(running.wsUrl);
    sockets.push(extra);
    assert.equal((await endedWithin(extra, 2000)).ended, true, 'the 11th socket of one address is dropped');
    const other = await handshake(running.wsUrl, { localAddress: OTHER_ADDRESS });
    assert.equal(other.status, 101, 'another address joins the chat');
    other.ws!.close();
    assert.equal(await refused(running, 'chat', 'per_address'), 1);
  });

  test('chat port: idle sockets of one address cannot keep another client from its handshake', async (t) => {
    // The chat port lets WS_MAX_CONNECTIONS + max(WS_MAX_CONNECTIONS, 256) sockets in (356 here).
    const { running, sockets } = await roster(t, { WS_MAX_CONNECTIONS: '100', MAX_CONNECTIONS_PER_ADDRESS: '200' });
    await holdSlots(sockets, running.wsUrl, 356, '');
    const other = await handshake(running.wsUrl, { localAddress: OTHER_ADDRESS });
    assert.equal(other.status, 101, 'another address joins the chat');
    other.ws!.close();
    assert.equal(await refused(running, 'chat', 'per_address'), 156);
  });

  test('trusted proxies are exempt (their clients are counted after the headers); other peers are not', async (t) => {
    const { running, sockets } = await roster(t, { MAX_CONNECTIONS_PER_ADDRESS: '4', TRUST_PROXY: '127.0.0.1' });
    await holdSlots(sockets, running.origin, 6);
    assert.equal(await getFrom(`${running.origin}/livez`, '127.0.0.1'), 'HTTP/1.1 200 OK', 'the proxy, past 4');
    for (let i = 0; i < 4; i++) sockets.push(await socketTo(running.origin, OTHER_ADDRESS));
    assert.equal(await getFrom(`${running.origin}/livez`, OTHER_ADDRESS), undefined, 'an untrusted peer, past 4');
  });

  for (const trust of ['1', '2', 'true'])
    test(`TRUST_PROXY=${trust} names no proxy: a peer that reaches both ports directly is capped all the same`, async (t) => {
      const { running, sockets } = await roster(t, { MAX_CONNECTIONS_PER_ADDRESS: '4', TRUST_PROXY: trust });
      await holdSlots(sockets, running.origin, 4);
      assert.equal(await getFrom(`${running.origin}/livez`, '127.0.0.1'), undefined, 'the REST port, past 4');
      await holdSlots(sockets, running.wsUrl, 4, '');
      const fifth = await socketTo(running.wsUrl);
      sockets.push(fifth);
      assert.equal((await endedWithin(fifth, 2000)).ended, true, 'the chat port, past 4');
      // Another address is served: the cap is per address, not a lock-out.
      assert.equal(await getFrom(`${running.origin}/livez`, OTHER_ADDRESS), 'HTTP/1.1 200 OK');
    });

  test('0 turns the cap off', async (t) => {
    const { running, sockets } = await roster(t, { MAX_CONNECTIONS_PER_ADDRESS: '0' });
    await holdSlots(sockets, running.origin, 300);
    assert.equal(await getFrom(`${running.origin}/livez`, '127.0.0.1'), 'HTTP/1.1 200 OK');
  });
});

describe('FIRST_BYTE_TIMEOUT_MS: a silent socket is closed early', () => {
  for (const port of ['REST', 'chat'] as const) {
    test(`${port} port: silent, closed after it; a slow client that has begun is left to HEADERS_TIMEOUT_MS`, async (t) => {
      const { running, sockets } = await roster(t, { FIRST_BYTE_TIMEOUT_MS: '300', HEADERS_TIMEOUT_MS: '5000' });
      const url = port === 'REST' ? running.origin : running.wsUrl;
      const [silent, started] = await Promise.all([socketTo(url), socketTo(url)]);
      sockets.push(silent, started);
      started.write('GET / HT');
      const began = performance.now();
      const outcome = await endedWithin(silent, 3000);
      assert.equal(outcome.ended, true, 'the silent socket is closed');
      assert.ok(performance.now() - began < 2500, 'well before HEADERS_TIMEOUT_MS');
      assert.equal(started.destroyed, false, 'the socket that has sent a byte is still open');
      assert.equal(await refused(running, port === 'REST' ? 'http' : 'chat', 'first_byte'), 1);
    });
  }
});

describe('limits are keyed by who a client is, not by its display name', () => {
  test('AUTH=jwt: a token with another subject and the victim’s name has a budget of its own', async (t) => {
    const running = await startRoster({ AUTH: 'jwt', JWT_SECRET: SECRET, RATE_LIMIT: '3/minute' });
    t.after(() => running.stop());
    const attacker = await token({ sub: 'attacker', name: 'Victim Name', role: 'user' });
    const victim = await token({ sub: 'victim', name: 'Victim Name', role: 'user' });
    const as = (jwt: string) => request(`${running.api}/users`, { headers: { authorization: `Bearer ${jwt}` } });
    for (let i = 0; i < 3; i++) assert.equal((await as(attacker)).status, 200);
    assertRefused(await as(attacker), 429, 'RATE_LIMITED');
    assert.equal((await as(victim)).status, 200, 'the victim’s own budget is untouched');

    // The chat spends the same budget per client: the attacker's handshake is refused, the victim joins.
    assert.equal((await handshake(`${running.wsUrl}/?access_token=${attacker}`)).status, 429);
    const joined = await handshake(`${running.wsUrl}/?access_token=${victim}`);
    assert.equal(joined.status, 101, 'the victim joins');
    joined.ws!.close();
  });

  test('the same subject from another issuer is another client', async (t) => {
    const running = await startRoster({ AUTH: 'jwt', JWT_SECRET: SECRET, RATE_LIMIT: '2/minute' });
    t.after(() => running.stop());
    const as = async (iss: string) =>
      (
        await request(`${running.api}/users`, {
          headers: { authorization: `Bearer ${await token({ sub: 's', iss })}` },
        })
      ).status;
    assert.deepEqual([await as('https://a.example'), await as('https://a.example')], [200, 200]);
    assert.equal(await as('https://a.example'), 429);
    assert.equal(await as('https://b.example'), 200);
  });
});

describe('a password guess costs from one budget on both doors', () => {
  /** AUTH=basic with one user (a cheap hash: the order of checks is tested, not scrypt), RATE_LIMIT=3/minute. */
  const basicRoster = async (t: TestContext) => {
    const CHEAP = { N: 2 ** 10, r: 8, p: 1 };
    const running = await startRoster({
      AUTH: 'basic',
      BASIC_USERS: `ada:${await hashPassword('lovelace-1815', CHEAP)}:admin`,
      RATE_LIMIT: '3/minute',
    });
    t.after(() => running.stop());
    return running;
  };

  test('RATE_LIMIT=3/minute: three wrong passwords on the REST port, and the chat handshake gets 429 before any check', async (t) => {
    const running = await basicRoster(t);
    for (let i = 0; i < 3; i++)
      assertRefused(
        await request(`${running.api}/users`, { headers: { authorization: basic('ada', `guess-${i}`) } }),
        401,
        'UNAUTHORIZED',
      );
    const chat = (password: string) => handshake(running.wsUrl, { headers: { authorization: basic('ada', password) } });
    assertRefused(await chat('guess-3'), 429, 'RATE_LIMITED', undefined, 'a fourth guess, on the chat port');
    assertRefused(await chat('lovelace-1815'), 429, 'RATE_LIMITED', undefined, 'the right password too');
  });

  test('and the other way round: guesses at the chat door spend the REST budget', async (t) => {
    const running = await basicRoster(t);
    for (let i = 0; i < 3; i++) {
      const refused = await handshake(running.wsUrl, { headers: { authorization: basic('ada', `guess-${i}`) } });
      assert.equal(refused.status, 401);
    }
    assertRefused(
      await request(`${running.api}/users`, { headers: { authorization: basic('ada', 'guess-3') } }),
      429,
      'RATE_LIMITED',
    );
  });
});
