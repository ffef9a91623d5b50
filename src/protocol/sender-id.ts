/**
 * How a chat sender is shown: the first 8 characters of its connection id (the first group of a
 * UUID). One rule for the browser console and the terminal client (src/cli/chat-view.ts imports this
 * file), so the same person has the same short id in both. Pure: no DOM, no Node.
 */
export function shortId(id: string): string {
  return id.slice(0, 8);
}
