/**
 * The request metrics kept in plain arrays (metrics.ts) expose exactly what prom-client's own Counter
 * and Histogram exposed for the same requests: the same lines, values and order. (Through real sockets,
 * test/http/faces.test.ts reads /metrics with a Prometheus parser.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { Metrics } from '../../src/ops/metrics.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** What prom-client printed before: its Counter and Histogram fed one request at a time. */
function reference() {
  const registry = new Registry();
  const labelNames = ['route', 'method', 'status'] as const;
  const requests = new Counter({
    name: 'roster_http_requests_total',
    help: 'HTTP requests by route pattern, method and status',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'roster_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern, method and status',
    labelNames,
    buckets: BUCKETS,
    registers: [registry],
  });
  return {
    registry,
    observe(route: string, method: string, status: number, seconds: number) {
      const labels = { route, method, status: String(status) };
      requests.inc(labels);
      duration.observe(labels, seconds);
    },
  };
}

/** The two request metrics' blocks of an exposition. */
function requestBlocks(text: string): string {
  return text
    .split('\n\n')
    .filter((block) => /^# HELP roster_http_request/.test(block))
    .map((block) => block.trimEnd()) // the last block of a registry ends with its newline
    .join('\n\n');
}

/** A seeded PRNG, so a failure can be replayed. */
function random(seed: number) {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe('request metrics in plain arrays', () => {
  test('expose what prom-client exposed for the same requests, in the same order', async () => {
    const metrics = new Metrics();
    const expected = reference();
    const next = random(19);
    const routes = ['/api/v1/users/:id', '/api/v1/users', '/api/v1/health', 'unmatched', '/metrics'];
    const methods = ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'];
    const statuses = [200, 201, 204, 400, 404, 405, 422, 429, 500, 503];
    // Bounds themselves (le is inclusive), values past the last bound, and a spread in between.
    const durations = [0, ...BUCKETS, 2.5000001, 7, 120];
    for (let index = 0; index < 5_000; index++) {
      const route = routes[Math.floor(next() * routes.length)]!;
      const method = methods[Math.floor(next() * methods.length)]!;
      const status = statuses[Math.floor(next() * statuses.length)]!;
      const seconds = next() < 0.3 ? durations[Math.floor(next() * durations.length)]! : next() * next() * 0.01;
      metrics.route(route).observe(method, status, seconds);
      expected.observe(route, method, status, seconds);
    }
    // One more series, observed after the others.
    metrics.route('/api/v1/docs').observe('GET', 200, 0.0003);
    expected.observe('/api/v1/docs', 'GET', 200, 0.0003);

    const mine = requestBlocks(await metrics.registry.metrics());
    const theirs = requestBlocks(await expected.registry.metrics());
    assert.ok(theirs.includes('roster_http_request_duration_seconds_bucket{le="+Inf"'));
    assert.deepEqual(mine.split('\n'), theirs.split('\n'));
    // Scraped twice, the same (collection does not add up again).
    assert.equal(requestBlocks(await metrics.registry.metrics()), theirs);
  });

  test('list the request metrics first, before the process metrics, as before', async () => {
    const metrics = new Metrics();
    metrics.route('/api/v1/health').observe('GET', 200, 0.001);
    const names = [...(await metrics.registry.metrics()).matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
    assert.deepEqual(names.slice(0, 2), [
      'roster_http_requests_total counter',
      'roster_http_request_duration_seconds histogram',
    ]);
    const json = await metrics.registry.getMetricsAsJSON();
    const histogram = json.find((metric) => metric.name === 'roster_http_request_duration_seconds');
    assert.equal(histogram?.type, 'histogram');
    assert.equal(histogram?.values.length, BUCKETS.length + 3);
  });

  test('a status the slot table does not cover is still counted', async () => {
    const metrics = new Metrics();
    metrics.route('/x').observe('GET', 999, 0.001);
    metrics.route('/x').observe('GET', 999, 0.001);
    assert.match(
      await metrics.registry.metrics(),
      /roster_http_requests_total\{route="\/x",method="GET",status="999"\} 2/,
    );
  });
});
