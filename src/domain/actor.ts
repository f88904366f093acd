import os from 'node:os';

export type Channel = 'window' | 'web' | 'cli' | 'mcp' | 'policy' | 'system';

/** Who did something: the OS user and the channel it came through (plus the agent, if any). */
export interface Actor {
  user: string;
  channel: Channel;
  /** What the agent says it is (an MCP client's name and version): a display label, never an identity. */
  client?: string;
  /**
   * The agent identity the host issued to the session (mcp channel only). It decides which steps
   * are the agent's own; the agent cannot choose it, only hold the credential the host handed it.
   */
  agent?: string;
}

/** The process's user, read once: os.userInfo() reads the user database at each call, and every connection's actor asked it. */
let processUser: string | undefined;

export function osUser(): string {
  if (processUser !== undefined) return processUser;
  try {
    processUser = os.userInfo().username;
  } catch {
    processUser = process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
  return processUser;
}

export function actorFor(channel: Channel, client?: string): Actor {
  return client === undefined ? { user: osUser(), channel } : { user: osUser(), channel, client };
}
