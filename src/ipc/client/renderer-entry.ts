import { errorFromBridge, type ExecutorClient } from './client.js';
import { METHOD_NAMES } from '../protocol/methods.js';
import { connectFromPage } from './web-client.js';

/**
 * How the renderer gets its client, in either shell: the Electron preload exposes a ready client
 * as window.executor (its key stays in the preload); in a browser tab opened by `executor serve`
 * the page connects itself with the token from its URL.
 */
export async function connectExecutor(): Promise<ExecutorClient> {
  const exposed = (globalThis as { executor?: ExecutorClient }).executor;
  if (exposed) return fromWindowApi(exposed);
  return connectFromPage();
}

/** The preload's functions, with typed errors restored (the bridge carries only messages). */
export function fromWindowApi(exposed: ExecutorClient): ExecutorClient {
  const client = { ...exposed } as Record<string, unknown>;
  for (const name of [...METHOD_NAMES, 'on'] as const) {
    const call = exposed[name] as (...args: unknown[]) => Promise<unknown>;
    client[name] = (...args: unknown[]) => call(...args).catch((error: unknown) => Promise.reject(errorFromBridge(error)));
  }
  return client as unknown as ExecutorClient;
}
