/**
 * A stand-in API that answers every request with 302 to another origin (another port), and that
 * other origin, which records the X-API-Key of whatever reaches it: to show that a client does not
 * carry its credential through a redirect. Both closed when the test ends.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export async function redirectingApi(t: TestContext): Promise<{ url: string; seen: (string | undefined)[] }> {
  const seen: (string | undefined)[] = [];
  const elsewhere = createServer((request, response) => {
    seen.push(request.headers['x-api-key'] as string | undefined);
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"error"}');
  });
  const redirecting = createServer((request, response) => {
    const { port } = elsewhere.address() as AddressInfo;
    response.writeHead(302, { location: `http://127.0.0.1:${port}${request.url}` }).end();
  });
  for (const server of [elsewhere, redirecting]) {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => server.close());
  }
  return { url: `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`, seen };
}
