import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkHostKey } from '../../../../src/sandbox/docker/known-hosts.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

/** A real host key made by ssh-keygen: its known_hosts form ("type base64") and the raw blob an SSH server sends. */
function hostKey(dir: string, name: string): { line: string; blob: Buffer } {
  const file = path.join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file]);
  const [type, base64] = fs.readFileSync(`${file}.pub`, 'utf8').trim().split(' ');
  return { line: `${type} ${base64}`, blob: Buffer.from(base64!, 'base64') };
}

function home(knownHosts: string): NodeJS.ProcessEnv {
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, '.ssh'));
  fs.writeFileSync(path.join(dir, '.ssh', 'known_hosts'), knownHosts);
  return { HOME: dir };
}

describe('the SSH host key check against known_hosts (the one dockerode would skip)', () => {
  const keys = tempDir();
  const engine = hostKey(keys, 'engine');
  const impostor = hostKey(keys, 'impostor');

  it('accepts the key listed for the host, by name, by [host]:port, in a list of names and by wildcard', () => {
    expect(checkHostKey('build.example', 22, engine.blob, home(`build.example ${engine.line}\n`))).toMatchObject({ accepted: true });
    expect(checkHostKey('build.example', 2222, engine.blob, home(`[build.example]:2222 ${engine.line}\n`)).accepted).toBe(true);
    expect(checkHostKey('10.0.0.7', 22, engine.blob, home(`# comment\nbuild.example,10.0.0.7 ${engine.line} me@laptop\n`)).accepted).toBe(
      true,
    );
    expect(checkHostKey('ci-3.example', 22, engine.blob, home(`ci-?.example ${engine.line}\n`)).accepted).toBe(true);
  });

  it('accepts a host ssh-keygen -H hashed, as OpenSSH writes them by default on Debian', () => {
    const env = home(`build.example ${engine.line}\n[build.example]:2222 ${engine.line}\n`);
    const file = path.join(env.HOME!, '.ssh', 'known_hosts');
    execFileSync('ssh-keygen', ['-q', '-H', '-f', file], { stdio: 'ignore' });
    expect(fs.readFileSync(file, 'utf8')).not.toContain('build.example');
    expect(checkHostKey('build.example', 22, engine.blob, env).accepted).toBe(true);
    expect(checkHostKey('build.example', 2222, engine.blob, env).accepted).toBe(true);
    expect(checkHostKey('other.example', 22, engine.blob, env)).toMatchObject({ accepted: false, reason: 'unknown-host' });
  });

  it('refuses an unknown host, another key for a known host, a @revoked key, and a host excluded by !pattern', () => {
    expect(checkHostKey('build.example', 22, engine.blob, home(''))).toMatchObject({ accepted: false, reason: 'unknown-host' });
    expect(checkHostKey('build.example', 22, impostor.blob, home(`build.example ${engine.line}\n`))).toMatchObject({
      accepted: false,
      reason: 'key-mismatch',
    });
    // Listed on port 22 only: another port is another host to OpenSSH.
    expect(checkHostKey('build.example', 2222, engine.blob, home(`build.example ${engine.line}\n`)).reason).toBe('unknown-host');
    expect(
      checkHostKey('build.example', 22, engine.blob, home(`build.example ${engine.line}\n@revoked build.example ${engine.line}\n`)),
    ).toMatchObject({ accepted: false, reason: 'revoked' });
    expect(checkHostKey('secret.example', 22, engine.blob, home(`*.example,!secret.example ${engine.line}\n`)).accepted).toBe(false);
  });
});
