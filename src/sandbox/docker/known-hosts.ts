import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The host key check OpenSSH makes, for the engine reached over ssh://: dockerode's SSH transport
 * (ssh2) accepts any host key unless told otherwise, so whoever answered at the address would get
 * every workspace and the engine's credentials. The key must be one the person's known_hosts (or the
 * system's) already lists for the host, as `ssh user@host` recorded it; a key listed as @revoked
 * is refused, and @cert-authority lines (host certificates) are not understood here.
 */

/** What the last check decided, so the caller can say why the connection was refused. */
export interface HostKeyVerdict {
  accepted: boolean;
  reason?: 'unknown-host' | 'key-mismatch' | 'revoked';
  files: string[];
}

interface KnownHostLine {
  marker: '' | '@revoked' | '@cert-authority';
  patterns: string[];
  keyBase64: string;
}

function knownHostsFiles(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME && env.HOME !== '' ? env.HOME : os.homedir();
  return [path.join(home, '.ssh', 'known_hosts'), path.join(home, '.ssh', 'known_hosts2'), '/etc/ssh/ssh_known_hosts'];
}

function parseLines(text: string): KnownHostLine[] {
  const lines: KnownHostLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    const marker = fields[0] === '@revoked' || fields[0] === '@cert-authority' ? (fields.shift() as KnownHostLine['marker']) : '';
    if (fields.length < 3) continue;
    lines.push({ marker, patterns: fields[0]!.split(','), keyBase64: fields[2]! });
  }
  return lines;
}

/** OpenSSH's wildcard patterns: `*` any run, `?` one character. */
function wildcardMatch(pattern: string, name: string): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 'i').test(name);
}

function patternMatches(pattern: string, name: string): boolean {
  if (pattern.startsWith('|1|')) {
    const [, , salt, hash] = pattern.split('|');
    if (!salt || !hash) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  return wildcardMatch(pattern, name);
}

/** A line names the host when one of its patterns matches and none of its `!` patterns does. */
function namesHost(line: KnownHostLine, name: string): boolean {
  let matched = false;
  for (const pattern of line.patterns) {
    if (pattern.startsWith('!')) {
      if (patternMatches(pattern.slice(1), name)) return false;
    } else if (patternMatches(pattern, name)) matched = true;
  }
  return matched;
}

/** Checks `key` (the raw public key blob the server sent) against the known_hosts files for host:port. */
export function checkHostKey(host: string, port: number, key: Buffer, env: NodeJS.ProcessEnv = process.env): HostKeyVerdict {
  // OpenSSH records a host on another port as [host]:port.
  const name = port === 22 ? host : `[${host}]:${port}`;
  const keyBase64 = key.toString('base64');
  const files = knownHostsFiles(env).filter((file) => fs.existsSync(file));
  let listed = false;
  let accepted = false;
  for (const file of files) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of parseLines(text)) {
      if (line.marker === '@cert-authority' || !namesHost(line, name)) continue;
      if (line.marker === '@revoked') {
        if (line.keyBase64 === keyBase64) return { accepted: false, reason: 'revoked', files };
        continue;
      }
      listed = true;
      if (line.keyBase64 === keyBase64) accepted = true;
    }
  }
  if (accepted) return { accepted: true, files };
  return { accepted: false, reason: listed ? 'key-mismatch' : 'unknown-host', files };
}

/** An ssh2 hostVerifier for host:port that remembers its verdict (ssh2 reports only "verification failed"). */
export function knownHostVerifier(
  host: string,
  port: number,
  env: NodeJS.ProcessEnv,
): ((key: Buffer) => boolean) & { last?: HostKeyVerdict } {
  const verifier = Object.assign(
    (key: Buffer): boolean => {
      verifier.last = checkHostKey(host, port, key, env);
      return verifier.last.accepted;
    },
    { last: undefined as HostKeyVerdict | undefined },
  );
  return verifier;
}
