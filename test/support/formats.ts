/** Formats the tests check values against, each written once. */

/** Server timestamps: UTC, ISO 8601 without an offset, with microseconds (docs/decisions.md). */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;

/** A UUID, any version, either case. */
export const UUID_LIKE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
