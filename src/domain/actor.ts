import os from 'node:os';

export type Channel = 'window' | 'web' | 'cli' | 'mcp' | 'policy' | 'system';

/** Who did something: the OS user and the channel it came through (plus the agent client, if any). */
export interface Actor {
  user: string;
  channel: Channel;
  client?: string;
}

export function osUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
}

export function actorFor(channel: Channel, client?: string): Actor {
  return client === undefined ? { user: osUser(), channel } : { user: osUser(), channel, client };
}
