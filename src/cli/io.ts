/**
 * What every `roster` command writes to, and its two standard answers: its help (exit status 0) and a
 * usage error (exit status 2), worded alike across commands.
 */

export interface Io {
  output: NodeJS.WritableStream;
  errors: NodeJS.WritableStream;
}

export const STANDARD_IO: Io = { output: process.stdout, errors: process.stderr };

/** Whether the arguments are `--help` (or `-h`) alone. */
export const asksHelp = (args: readonly string[]): boolean =>
  args.length === 1 && (args[0] === '--help' || args[0] === '-h');

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
