/**
 * The service's logger from the configuration: JSON lines on stdout (`LOG_FORMAT=json`, the default,
 * for log collectors), or lines for people (`LOG_FORMAT=pretty`, what `npm run dev` uses): pino-pretty
 * when it is installed (a development dependency), else the plain text of `plainLine`.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config/index.js';

export async function createLogger(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  stream: NodeJS.WritableStream = process.stdout,
): Promise<Logger> {
  if (config.logFormat === 'json') return pino({ level: config.logLevel });
  return pino({ level: config.logLevel }, (await prettyStream(stream)) ?? plainStream(stream));
}

async function prettyStream(stream: NodeJS.WritableStream): Promise<DestinationStream | undefined> {
  try {
    const { default: pretty } = await import('pino-pretty');
    return pretty({
      colorize: (stream as { isTTY?: boolean }).isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      destination: stream,
      sync: true,
    });
  } catch {
    return undefined; // not installed (a production install): plain text
  }
}

function plainStream(stream: NodeJS.WritableStream): DestinationStream {
  return { write: (line: string) => void stream.write(plainLine(line)) };
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v']);

/** One pino JSON line as `HH:MM:SS.mmm LEVEL message key=value …`, the error's stack below it. */
function plainLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toTimeString().slice(0, 8) : '--:--:--';
  const level = (LEVELS[entry.level as number] ?? String(entry.level)).padEnd(5);
  const fields = Object.entries(entry)
    .filter(([key]) => !OMITTED.has(key) && key !== 'err')
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const err = entry.err as { stack?: string; message?: string } | undefined;
  const stack = err ? `\n    ${(err.stack ?? err.message ?? '').split('\n').join('\n    ')}` : '';
  return `${time} ${level} ${String(entry.msg ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}${stack}\n`;
}
