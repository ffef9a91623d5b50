/**
 * `Idempotency-Key` on creates (IETF httpapi draft, Stripe's semantics), as docs/decisions.md "Retries
 * and concurrent edits" rules it: claimed in the store (users/idempotency-keys.ts) under its principal
 * and the SHA-256 of the body as received; a success is stored by the store with the user in one atomic
 * step (users/store.ts: Keep); any error releases the key, so that a repeat is processed afresh. A 409
 * EMAIL_EXISTS is not kept either: it creates nothing, and kept it let a client store a row a request
 * for a day by repeating an existing email under fresh keys; its repeat meets the same 409 anyway.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientKey } from '../edge/client-identity.js';
import { JSON_CONTENT_TYPE } from '../edge/raw-reply.js';
import { RosterError } from '../errors.js';
import type { Claimed, IdempotencyKeys, KeyClaim, SavedReply } from '../users/idempotency-keys.js';
import {
  IDEMPOTENCY_KEY,
  IDEMPOTENCY_KEY_MAX as MAX_KEY,
  IDEMPOTENT_REPLAYED,
  RETRY_AFTER,
} from '../protocol/http-headers.js';

/**
 * How long a claim without a reply counts as in flight: past every request's own deadline
 * (REQUEST_TIMEOUT_MS, 30 s by default; a statement's, 5 s), so only a crashed instance leaves it;
 * a repeat then takes the key over (a create of the crashed instance committed its reply with it, and
 * a late one of a live instance finds the claim no longer its own and stores nothing).
 */
const LEASE_MS = 60_000;

declare module 'fastify' {
  interface FastifyRequest {
    /** SHA-256 of the body as received (hex), when the request carries an Idempotency-Key. */
    bodyDigest: string | undefined;
  }
}

export const digestOf = (body: string): string => createHash('sha256').update(body).digest('hex');

/** A Structured Field String (`"…"`, with `\"` and `\\`), or leniently a bare token of visible ASCII. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
const BARE = /^[\x21-\x7e]+$/;

const malformed = (why: string) =>
  new RosterError(
    'ERROR',
    `Idempotency-Key ${why}: send a quoted string of 1 to ${MAX_KEY} visible ASCII characters, e.g. "8e03978e-40d5-43e8-bc93-6894a57f9324"`,
  );

/** The key of the request, undefined without one; 400 when malformed. */
function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[IDEMPOTENCY_KEY];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw malformed('is sent more than once');
  const text = value.trim();
  const quoted = SF_STRING.exec(text);
  const key = quoted ? quoted[1]!.replace(/\\(["\\])/g, '$1') : text.startsWith('"') ? undefined : text;
  if (key === undefined || (!quoted && !BARE.test(key))) throw malformed('is not a string');
  if (key.length === 0 || key.length > MAX_KEY) throw malformed(`must hold 1 to ${MAX_KEY} characters`);
  return key;
}

/** Claims, replays and keeps the replies of keyed creates, in the store's `keys`. */
export class Idempotency {
  /** Claims that could not be released (the database was away), retried as docs/decisions.md rules. */
  readonly #unreleased = new Map<string, KeyClaim>();
  #retrying: NodeJS.Timeout | undefined;

  constructor(
    private readonly keys: IdempotencyKeys,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Runs `create` once per key: without a key, just runs it; with one, claims it first and gives
   * `create` the claim, under which `create` stores its reply together with what it creates (the
   * store's `insert` with `keep`); or replays what the key holds.
   */
  async handle(
    request: FastifyRequest,
    reply: FastifyReply,
    create: (claim: KeyClaim | undefined) => Promise<SavedReply>,
  ): Promise<FastifyReply> {
    const key = idempotencyKeyOf(request);
    if (key === undefined) return send(reply, await create(undefined));
    const now = this.now();
    const claim: KeyClaim = {
      principal: request.principal ? clientKey(request.principal, '') : 'anonymous',
      key,
      fingerprint: request.bodyDigest ?? digestOf(''),
      token: randomUUID(),
      now,
      expiresAt: now + this.ttlMs,
      leaseUntil: now + LEASE_MS,
    };
    const stale = this.#unreleased.get(claimId(claim));
    if (stale) await this.#release(stale); // a failure here is the database still away: its 503
    let held: Claimed;
    try {
      held = await this.keys.claim(claim);
    } catch (error) {
      // The claim may be stored all the same (its INSERT committed, then the connection went before the
      // reply or a later step): released as a failed create's is, so that the retry finds the key free.
      await this.#abandon(claim);
      throw error;
    }
    if (held.state !== 'claimed') {
      if (held.fingerprint !== claim.fingerprint)
        throw new RosterError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body');
      if (held.state === 'in_flight')
        throw new RosterError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still in progress', {
          headers: { [RETRY_AFTER]: '1' },
        });
      return send(reply.header(IDEMPOTENT_REPLAYED, 'true'), held.reply);
    }
    let created: SavedReply;
    try {
      created = await create(claim);
    } catch (error) {
      // Deletes nothing if the create stored its reply after all (it committed, unseen by this request).
      await this.#abandon(claim);
      throw error;
    }
    // A success was kept by `create` itself, with what it stored.
    return send(reply, created);
  }

  /** Releases a claim this request gives up, or, the database away, retries that until it works. */
  #abandon(claim: KeyClaim): Promise<void> {
    return this.#release(claim).catch(() => this.#releaseLater(claim));
  }

  async #release(claim: KeyClaim): Promise<void> {
    await this.keys.release(claim);
    this.#unreleased.delete(claimId(claim));
  }

  #releaseLater(claim: KeyClaim): void {
    if (this.#unreleased.size >= MAX_UNRELEASED) this.#unreleased.delete(this.#unreleased.keys().next().value!);
    this.#unreleased.set(claimId(claim), claim);
    this.#retrying ??= setInterval(() => {
      const now = this.now();
      for (const held of this.#unreleased.values())
        if (held.leaseUntil <= now) this.#unreleased.delete(claimId(held));
        else this.#release(held).catch(() => undefined);
      if (this.#unreleased.size === 0) {
        clearInterval(this.#retrying);
        this.#retrying = undefined;
      }
    }, RELEASE_RETRY_MS).unref();
  }
}

const RELEASE_RETRY_MS = 500;
/** Unreleased claims remembered at most (the oldest forgotten first: its lease still ends it). */
const MAX_UNRELEASED = 10_000;
const claimId = (claim: KeyClaim): string => `${claim.principal}\n${claim.key}`;

function send(reply: FastifyReply, saved: SavedReply): FastifyReply {
  return reply.code(saved.status).headers(saved.headers).type(JSON_CONTENT_TYPE).send(saved.body);
}

/** The headers of a create's reply, as the OpenAPI document describes them. */
export const idempotentHeaders = {
  'Idempotent-Replayed': {
    type: 'string',
    enum: ['true'],
    description: 'Present on the replay of a reply kept under the Idempotency-Key',
  },
};
