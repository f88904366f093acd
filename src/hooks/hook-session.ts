import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../fs/atomic-write.js';
import type { HookClientName } from './tool-calls.js';

/*
 * A client session's agent identity across hook calls. Every tool call starts a new hook process,
 * but the steps of one Claude Code or Gemini CLI session are one agent's: the first call keeps the
 * credential the host issued, later calls of the same session present it to be that agent again.
 * Kept in the data directory (0600, like the socket tokens the hook already reads): the credential
 * only groups a session's steps; what an agent may do is the policy's and the person's to say.
 */

export const CLIENT_LABELS: Record<HookClientName, string> = { 'claude-code': 'Claude Code', 'gemini-cli': 'Gemini CLI' };
const SESSIONS_FOLDER = 'hook-sessions';

const sessionFile = (dataDir: string, client: HookClientName, sessionId: string) =>
  path.join(dataDir, SESSIONS_FOLDER, `${client}-${createHash('sha256').update(sessionId).digest('hex').slice(0, 32)}.credential`);

/** The label the queue, History and Runs show: the client, its session, the folder it works in. */
export function sessionLabel(client: HookClientName, sessionId: string, cwd: string): string {
  const shortSession = sessionId.replace(/[^\w-]/g, '').slice(0, 8) || 'unnamed';
  // Control characters would garble the person's queue; the label is capped as an MCP client's name is.
  return `${CLIENT_LABELS[client]} · session ${shortSession} · folder ${cwd}`.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 200);
}

export function readSessionCredential(dataDir: string, client: HookClientName, sessionId: string): string | null {
  try {
    const stored = fs.readFileSync(sessionFile(dataDir, client, sessionId), 'utf8').trim();
    return stored.length > 0 && stored.length <= 256 ? stored : null;
  } catch {
    return null;
  }
}

export function keepSessionCredential(dataDir: string, client: HookClientName, sessionId: string, credential: string): void {
  const file = sessionFile(dataDir, client, sessionId);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, Buffer.from(credential, 'utf8'), 0o600);
}

/*
 * The family of a client's sessions in one folder: the host's credential for it, kept beside the
 * session credentials. A rule the person remembers for a step of one session binds to the family
 * (src/domain/remembered-rule.ts), so it holds in that client's later sessions in the same folder.
 */
const familyFile = (dataDir: string, client: HookClientName, cwd: string) =>
  path.join(
    dataDir,
    SESSIONS_FOLDER,
    `${client}-folder-${createHash('sha256').update(path.resolve(cwd)).digest('hex').slice(0, 32)}.family`,
  );

export function readFamilyCredential(dataDir: string, client: HookClientName, cwd: string): string | null {
  try {
    const stored = fs.readFileSync(familyFile(dataDir, client, cwd), 'utf8').trim();
    return stored.length > 0 && stored.length <= 256 ? stored : null;
  } catch {
    return null;
  }
}

export function keepFamilyCredential(dataDir: string, client: HookClientName, cwd: string, credential: string): void {
  const file = familyFile(dataDir, client, cwd);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, Buffer.from(credential, 'utf8'), 0o600);
}
