/**
 * The console's chat connection: the protocol's session that survives drops (ReconnectingChat, in
 * src/protocol, which `roster chat` runs too) over the browser's WebSocket, with the contract's ping
 * every 30 s, the shared backoff and the room's last 50 messages on joining.
 */
import { DEFAULT_BACKOFF, ReconnectingChat, type BackoffOptions, type SessionEvents } from '@roster/protocol';

export type { ServerMessage, SessionState as ConnectionState } from '@roster/protocol';

export interface ConnectionOptions {
  /** Contract: a client sends an application-level ping every 30 seconds. */
  pingIntervalMs: number;
  backoff: BackoffOptions;
  /**
   * Recent messages asked for on joining; every reconnection then asks for what was missed (`since`),
   * so that nothing is lost or shown twice while the room keeps it. 0: the contract's frames only.
   */
  history: number;
}

const DEFAULT_CONNECTION_OPTIONS: ConnectionOptions = { pingIntervalMs: 30_000, backoff: DEFAULT_BACKOFF, history: 50 };

/** A session, not started yet: a first connection that fails is retried like any other. */
export function chatConnection(
  resolveUrl: () => Promise<string>,
  events: Required<Pick<SessionEvents, 'state' | 'message'>>,
  options: ConnectionOptions = DEFAULT_CONNECTION_OPTIONS,
): ReconnectingChat {
  return new ReconnectingChat({ url: resolveUrl, connect: (url) => new WebSocket(url), ...options }, events);
}
