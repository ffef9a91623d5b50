/**
 * The credential the console signs in with, when Roster's AUTH is on: how it is kept, how it goes on a
 * REST request (a header) and how it goes on the chat handshake (the URL: browsers cannot set headers
 * on a WebSocket).
 */
import type { AuthScheme } from './config.js';

export type Credential =
  | { kind: 'apikey'; key: string }
  | { kind: 'basic'; user: string; password: string }
  | { kind: 'bearer'; token: string };

export type CredentialKind = Credential['kind'];

/** What a request carries: the credential's header, and whether cookies and the browser's own auth may join in. */
export interface Signing {
  headers: Record<string, string>;
  /**
   * `omit` for Basic: a 401 with `WWW-Authenticate: Basic` to a request that may carry the browser's
   * credentials makes the browser pop up its own sign-in dialog (Fetch standard, "HTTP-network-or-
   * cache fetch"); without them it just hands the 401 to the console, whose form asks again.
   */
  credentials: RequestCredentials;
}

/** The credential each scheme needs; null for `none`. */
export function kindOf(scheme: AuthScheme): CredentialKind | null {
  switch (scheme) {
    case 'none':
      return null;
    case 'apikey':
      return 'apikey';
    case 'basic':
      return 'basic';
    case 'jwt':
    case 'oauth2':
      return 'bearer';
  }
}

/*
 * sessionStorage, not localStorage: the credential lives as long as this tab and goes when it is
 * closed, so it is not left on disk for the next person at a shared computer, nor handed to every
 * other tab of this origin. A reload within the tab still keeps the user signed in. (Either storage is
 * readable by scripts of the page's origin; the console's CSP allows only its own scripts.)
 */
const STORAGE_KEY = 'roster.console.credential';

/** The credential saved in this tab for this kind, if any; a saved one of another kind is dropped. */
export function loadCredential(kind: CredentialKind): Credential | null {
  let saved: unknown;
  try {
    const text = window.sessionStorage.getItem(STORAGE_KEY);
    if (text === null) return null;
    saved = JSON.parse(text);
  } catch {
    return null; // storage blocked, or not ours: sign in again
  }
  const credential = parseCredential(saved);
  if (credential?.kind === kind) return credential;
  forgetCredential();
  return null;
}

export function saveCredential(credential: Credential): void {
  try {
    window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(credential));
  } catch {
    // Storage blocked or full: the credential still works until the page is reloaded.
  }
}

export function forgetCredential(): void {
  try {
    window.sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Storage blocked: nothing was saved.
  }
}

function parseCredential(value: unknown): Credential | null {
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  const text = (name: string) =>
    typeof record[name] === 'string' && record[name] !== '' ? (record[name] as string) : null;
  switch (record.kind) {
    case 'apikey': {
      const key = text('key');
      return key === null ? null : { kind: 'apikey', key };
    }
    case 'basic': {
      const user = text('user');
      const password = text('password');
      return user === null || password === null ? null : { kind: 'basic', user, password };
    }
    case 'bearer': {
      const token = text('token');
      return token === null ? null : { kind: 'bearer', token };
    }
    default:
      return null;
  }
}

/** The headers of a REST request: X-API-Key, Authorization: Basic or Authorization: Bearer. */
export function signingOf(credential: Credential): Signing {
  switch (credential.kind) {
    case 'apikey':
      return { headers: { 'x-api-key': credential.key }, credentials: 'same-origin' };
    case 'basic':
      return {
        headers: { authorization: `Basic ${base64(`${credential.user}:${credential.password}`)}` },
        credentials: 'omit',
      };
    case 'bearer':
      return { headers: { authorization: `Bearer ${credential.token}` }, credentials: 'same-origin' };
  }
}

/** UTF-8, then base64, as Roster decodes Basic credentials (btoa alone takes Latin-1 only). */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return window.btoa(binary);
}

/**
 * The chat address with the credential in it: `api_key` or `access_token` in the query, which Roster
 * reads on the handshake (and redacts from its logs). Basic has no query parameter: the user and
 * password go in the URL's user-info instead, which the browser sends as `Authorization: Basic` once
 * the chat answers 401 with its Basic challenge (Chromium does: test/console/auth.test.ts; a browser
 * that does not cannot join the chat with AUTH=basic).
 */
export function chatAddressWith(address: string, credential: Credential): string {
  const url = new URL(address);
  switch (credential.kind) {
    case 'apikey':
      url.searchParams.set('api_key', credential.key);
      break;
    case 'bearer':
      url.searchParams.set('access_token', credential.token);
      break;
    case 'basic':
      url.username = credential.user;
      url.password = credential.password;
      break;
  }
  return url.href;
}

/**
 * Who the user is signed in as, for the top bar. For a token, its `name` (else `sub`) and `role`
 * claims, read without checking the signature: for display only, Roster decides what the token may do.
 */
export function describeCredential(credential: Credential): string {
  switch (credential.kind) {
    case 'apikey':
      return 'Signed in with an API key';
    case 'basic':
      return `Signed in as ${credential.user}`;
    case 'bearer': {
      const claims = tokenClaims(credential.token);
      if (!claims) return 'Signed in with a bearer token';
      return claims.role ? `Signed in as ${claims.who} (${claims.role})` : `Signed in as ${claims.who}`;
    }
  }
}

function tokenClaims(token: string): { who: string; role: string | null } | null {
  const payload = token.split('.')[1];
  if (payload === undefined) return null;
  try {
    const json = new TextDecoder().decode(
      Uint8Array.from(window.atob(payload.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)),
    );
    const claims = JSON.parse(json) as Record<string, unknown>;
    const who =
      typeof claims.name === 'string' && claims.name !== ''
        ? claims.name
        : typeof claims.sub === 'string'
          ? claims.sub
          : null;
    if (who === null) return null;
    // A token without a role claim gets Roster's default role (src/edge/authenticator.ts), shown as none.
    return { who, role: typeof claims.role === 'string' ? claims.role : null };
  } catch {
    return null;
  }
}
