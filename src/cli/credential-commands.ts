/**
 * `roster hash-password` and `roster token`: the credentials of docs/protection.md's examples. The first makes
 * a BASIC_USERS hash (src/edge/password.ts); the second mints an HS256 token for AUTH=jwt, with jose,
 * for trying the API and for tests (a real deployment's tokens come from whoever issues them).
 */
import { SignJWT } from 'jose';
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { hashPassword } from '../edge/password.js';
import { JWT_SECRET_MIN_BYTES } from '../config/index.js';
import { JWT_SECRET, rawValue } from '../config/settings.js';
import { DEFAULT_ROLE } from '../config/roles.js';
import { print, STANDARD_IO, usageError, type Io as OutputIo } from './io.js';

export const HASH_PASSWORD_USAGE = `Usage: roster hash-password

Reads a password and prints its hash for BASIC_USERS (name:hash[:role]): scrypt, in the form
scrypt$N$r$p$salt$hash. On a terminal the password is asked for twice, without echo; otherwise it
is the first line of the standard input:
  echo 'correct horse battery staple' | roster hash-password`;

export const TOKEN_USAGE = `Usage: roster token --sub SUBJECT [--name NAME] [--role ROLE] [--expires-in TIME] [--secret SECRET]

Prints an HS256 JSON Web Token for AUTH=jwt, signed with --secret or else $JWT_SECRET (at least 32
bytes). Claims: sub, name (optional), role (admin may write users; anything else reads), iat, exp.

Options:
  --sub SUBJECT       the sub claim (required)
  --name NAME         the name claim: shown to others when the holder joins the chat
  --role ROLE         the role claim (default: user)
  --expires-in TIME   lifetime such as 30s, 15m, 1h, 7d (default: 1h)
  --secret SECRET     the signing secret (default: $JWT_SECRET)`;

/** The --expires-in values taken: seconds, minutes, hours or days, as jose's setExpirationTime reads them. */
const LIFETIME = /^\d+\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$/i;

interface Io extends OutputIo {
  input: NodeJS.ReadStream;
}

const STANDARD: Io = { ...STANDARD_IO, input: process.stdin };

export async function hashPasswordCommand(args: string[], io: Io = STANDARD): Promise<number> {
  if (args.length > 0)
    return usageError(
      io,
      'hash-password',
      `takes no arguments (got ${args.join(' ')}); the password comes from the standard input`,
    );
  let password: string;
  if (io.input.isTTY) {
    password = await askHidden(io, 'Password: ');
    const again = await askHidden(io, 'Again: ');
    if (again !== password) {
      io.errors.write('roster hash-password: the passwords differ\n');
      return 1;
    }
  } else {
    io.input.setEncoding('utf8'); // as text, not via text()'s TextDecoder, which would drop a byte order mark
    password = (await text(io.input)).split(/\r?\n/)[0] ?? '';
  }
  if (password === '') {
    io.errors.write('roster hash-password: the password is empty\n');
    return 1;
  }
  io.output.write(`${await hashPassword(password)}\n`);
  return 0;
}

export async function tokenCommand(
  args: string[],
  io: Io = STANDARD,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        sub: { type: 'string' },
        name: { type: 'string' },
        role: { type: 'string' },
        'expires-in': { type: 'string' },
        secret: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    return usageError(io, 'token', (error as Error).message);
  }
  if (values.help) return print(io, TOKEN_USAGE);
  if (!values.sub) return usageError(io, 'token', '--sub is required');
  // Trimmed as the server reads it, so the token verifies against the secret it holds.
  const secret = values.secret ?? rawValue(env, JWT_SECRET.name);
  if (!secret || Buffer.byteLength(secret) < JWT_SECRET_MIN_BYTES)
    return usageError(io, 'token', `needs --secret or JWT_SECRET of at least ${JWT_SECRET_MIN_BYTES} bytes`);
  const expiresIn = values['expires-in'] ?? '1h';
  if (!LIFETIME.test(expiresIn))
    return usageError(io, 'token', `--expires-in must be a time such as 30s, 15m, 1h or 7d (got "${expiresIn}")`);
  const claims: Record<string, string> = { role: values.role ?? DEFAULT_ROLE };
  if (values.name) claims.name = values.name;
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(values.sub)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(secret));
  io.output.write(`${token}\n`);
  return 0;
}

/** One line from the terminal in raw mode, echoing nothing; Ctrl-C aborts. */
function askHidden(io: Io, prompt: string): Promise<string> {
  io.errors.write(prompt);
  const input = io.input;
  return new Promise((resolve, reject) => {
    let line = '';
    input.setRawMode(true);
    input.setEncoding('utf8');
    input.resume();
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004' || char === '\u0003') {
          finish();
          io.errors.write('\n');
          return char === '\u0003' ? reject(new Error('interrupted')) : resolve(line);
        }
        if (char === '\u007f' || char === '\b') line = line.slice(0, -1);
        else line += char;
      }
    };
    const finish = () => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
    };
    input.on('data', onData);
  });
}
