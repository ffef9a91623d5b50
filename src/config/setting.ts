/**
 * How a setting is declared and read: the mechanism under settings.ts' table, apart so that the table
 * holds nothing else.
 */
import type { Parse } from './readers.js';

export interface Setting<T> {
  readonly name: string; // the environment variable
  readonly fallback: T; // the value when the variable is unset or empty
  readonly parse: Parse<T>;
  readonly shown: string; // the default as docs/configuration.md shows it
  readonly help: string; // its description there (links relative to docs/)
}

/** Every setting, in the order settings.ts declares them. */
export const declared: Setting<unknown>[] = [];
/** Declares a setting; `shown` by default is the fallback as code, or `(unset)`. */
export function setting<T>(
  name: string,
  fallback: T,
  parse: Parse<T>,
  help: string,
  shown = fallback === undefined ? '(unset)' : `\`${[fallback].flat().join(',')}\``,
): Setting<T> {
  const declaration = { name, fallback, parse, shown, help };
  declared.push(declaration);
  return declaration;
}

export type Env = Readonly<Record<string, string | undefined>>;

/** A variable's text, trimmed; set but empty counts as unset. */
export function rawValue(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** A setting's value in `env`: its reader's, or its default when unset; a bad value throws ConfigError. */
export function read<T>(env: Env, setting: Setting<T>): T {
  const value = rawValue(env, setting.name);
  return value === undefined ? setting.fallback : setting.parse(value, setting.name);
}
