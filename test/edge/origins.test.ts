/**
 * The origin policy of chat handshakes (edge/origins.ts), as a table: no Origin always passes;
 * CORS_ORIGINS lists who may; without it and with AUTH on, only Roster's own pages; otherwise anyone.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { originAllowed } from '../../src/edge/origins.js';

type Own = { host: string | undefined; restPort: number };
const OWN: Own = { host: 'roster.example:8765', restPort: 5000 };

const cases: [
  name: string,
  origins: readonly string[] | undefined,
  origin: string | undefined,
  own: Own | undefined,
  expected: boolean,
][] = [
  // Non-browser clients send no Origin.
  ['no Origin, nothing configured', undefined, undefined, undefined, true],
  ['no Origin, a list that names others', ['https://app.example'], undefined, undefined, true],
  ['no Origin, AUTH on', undefined, undefined, OWN, true],
  // CORS_ORIGINS decides when set, with or without AUTH.
  ['a listed origin', ['https://app.example', 'https://admin.example'], 'https://admin.example', undefined, true],
  ['an origin not listed', ['https://app.example'], 'https://evil.example', undefined, false],
  ['an origin listed with another port', ['https://app.example'], 'https://app.example:8443', undefined, false],
  ['an origin listed with another scheme', ['https://app.example'], 'http://app.example', undefined, false],
  ['a wildcard list', ['*'], 'https://anyone.example', undefined, true],
  ['a list wins over own pages under AUTH', ['https://app.example'], 'http://roster.example:5000', OWN, false],
  ['an empty list', [], 'https://app.example', undefined, false],
  // No list, no AUTH: any origin, as the contract has it.
  ['any origin without a list or AUTH', undefined, 'https://evil.example', undefined, true],
  ['the string "null" without a list or AUTH', undefined, 'null', undefined, true],
  // No list, AUTH on: Roster's own pages only.
  ['the console on the REST port', undefined, 'http://roster.example:5000', OWN, true],
  ['the console over https on the REST port', undefined, 'https://roster.example:5000', OWN, true],
  ['the chat’s own address (one origin behind a proxy)', undefined, 'https://roster.example:8765', OWN, true],
  ['another port on the same host', undefined, 'http://roster.example:3000', OWN, false],
  ['the REST port on another host', undefined, 'http://evil.example:5000', OWN, false],
  ['a default port that is not the REST port', undefined, 'https://roster.example', OWN, false],
  [
    'a default port that is the REST port (https, 443)',
    undefined,
    'https://roster.example',
    { host: 'roster.example', restPort: 443 },
    true,
  ],
  [
    'a default port that is the REST port (http, 80)',
    undefined,
    'http://roster.example',
    { host: 'roster.example', restPort: 80 },
    true,
  ],
  ['an Origin that is not a URL', undefined, 'null', OWN, false],
  [
    'no Host header to compare with',
    undefined,
    'http://roster.example:5000',
    { host: undefined, restPort: 5000 },
    false,
  ],
  [
    'a Host header that is not a host',
    undefined,
    'http://roster.example:5000',
    { host: 'bad host/', restPort: 5000 },
    false,
  ],
];

describe('originAllowed', () => {
  for (const [name, origins, origin, own, expected] of cases) {
    test(`${name}: ${expected ? 'allowed' : 'refused'}`, () => {
      assert.equal(originAllowed(origins, origin, own), expected);
    });
  }
});
