/** The Link header's `rel="next"` as clients read it (RFC 8288), table-driven. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nextLinkOf } from '../../src/protocol/http-headers.js';

const CASES: [header: string | null | undefined, next: string | undefined][] = [
  [null, undefined],
  [undefined, undefined],
  ['', undefined],
  ['</api/v1/users?after=abc.def&limit=2>; rel="next"', '/api/v1/users?after=abc.def&limit=2'],
  ['<https://example.com/a?b=1>;rel=next', 'https://example.com/a?b=1'],
  ['</first>; rel="prev", </second>; rel="next"', '/second'],
  ['</a,b>; rel="next"', '/a,b'],
  ['</one>; title="x, rel=next"; rel="prev"', undefined],
  ['</one>; rel="prev next"', '/one'],
  ['</one>; REL="Next"', '/one'],
  ['</one>; rel="nextpage"', undefined],
  ['</one>', undefined],
];

test('nextLinkOf: the target of the rel="next" link, or undefined', () => {
  for (const [header, next] of CASES) assert.equal(nextLinkOf(header), next, String(header));
});
