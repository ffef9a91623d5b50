/**
 * What every `roster` command writes to, and its two standard answers: its help (exit status 0) and a
 * usage error (exit status 2), worded alike across commands.
 */
import { ConfigError, loadConfig, type StorageConfig } from '../config/index.js';
import { storeBackend } from '../users/stores/registry.js';
import type { StoreBackend } from '../users/stores/backend.js';

export interface Io {
  output: NodeJS.WritableStream;
  errors: NodeJS.WritableStream;
}

export const STANDARD_IO: Io = { output: process.stdout, errors: process.stderr };

/** Prints a command's help: exit status 0. */
export function print(io: Io, text: string): number {
  io.output.write(`${text}\n`);
  return 0;
}

/** `roster <command>: <message>`, and where its help is: exit status 2. */
export function usageError(io: Io, command: string, message: string): number {
  io.errors.write(`roster ${command}: ${message}\nRun 'roster ${command} --help' for usage.\n`);
  return 2;
}

/** The storage setting of `env` and the store backend it names; a bad setting is a usage error (its status). */
export function configuredStore(
  io: Io,
  command: string,
  env: NodeJS.ProcessEnv,
): { storage: StorageConfig; backend: StoreBackend } | number {
  let storage;
  try {
    storage = loadConfig(env).storage;
  } catch (error) {
    if (error instanceof ConfigError) return usageError(io, command, `invalid configuration: ${error.message}`);
    throw error;
  }
  return { storage, backend: storeBackend(storage) };
}
