/** Entry point of the browser console: loads the settings, then starts the users and chat panels. */
import { ChatPanel } from './chat-panel.js';
import { chatAddress, DEFAULT_ROLES, loadConfig, type ConsoleConfig } from './config.js';
import { UsersPanel } from './users-panel.js';

let config: Promise<ConsoleConfig> | null = null;

/** The settings, fetched once; a failed fetch is tried again on the next call. */
function settings(): Promise<ConsoleConfig> {
  config ??= loadConfig().catch((error: unknown) => {
    config = null;
    throw error;
  });
  return config;
}

function main(): void {
  const users = new UsersPanel(DEFAULT_ROLES);
  users.load();
  void settings().then(
    (loaded) => users.setRoles(loaded.roles),
    () => undefined, // the default roles stay; the chat reports the problem and retries
  );

  const chat = new ChatPanel(async () => chatAddress(await settings(), new URL(window.location.href)));
  chat.start();
}

main();
