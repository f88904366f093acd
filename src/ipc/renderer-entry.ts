import type { ExecutorClient } from './client.js';
import { connectFromPage } from './web-client.js';

/**
 * How the renderer gets its client, in either shell: the Electron preload exposes a ready client
 * as window.executor (its key stays in the preload); in a browser tab opened by `executor serve`
 * the page connects itself with the token from its URL.
 */
export async function connectExecutor(): Promise<ExecutorClient> {
  const exposed = (globalThis as { executor?: ExecutorClient }).executor;
  if (exposed) return exposed;
  return connectFromPage();
}
