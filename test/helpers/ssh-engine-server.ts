import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import type * as Ssh2 from 'ssh2';
import { tempDir } from './temp-dirs.js';
import type { Teardown } from './teardown.js';

const ssh2 = createRequire(import.meta.url)('ssh2') as typeof Ssh2;

/**
 * An SSH server (ssh2's, in the test process; the machine has no sshd) that does what `ssh host
 * docker system dial-stdio` does on a remote engine's machine: it accepts one user's public key and
 * joins the exec channel to an engine socket. With a real ssh-agent holding that user's key, and a
 * HOME whose known_hosts lists (or does not list) the server's host key, Executor's ssh:// path runs
 * end to end: handshake, host key check, agent authentication, the Docker API through the channel.
 */
export interface SshEngine {
  port: number;
  /** ssh://tester@127.0.0.1:PORT */
  dockerHost: string;
  /** The running ssh-agent's socket, holding the accepted key. */
  agentSocket: string;
  /** "[127.0.0.1]:PORT ssh-ed25519 AAAA…": the line `ssh` would have recorded. */
  knownHostsLine: string;
  /** Another key's line for the same host: what a man in the middle would present, seen from the other side. */
  impostorLine: string;
  /** Exec commands the server was asked to run. */
  execs: string[];
  /** A HOME whose ~/.ssh/known_hosts holds `lines`. */
  home(lines: string[]): string;
}

function keyPair(dir: string, name: string): string {
  const file = path.join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file]);
  return file;
}

export async function startSshEngineServer(engineSocket: string, teardown: Teardown): Promise<SshEngine> {
  const dir = tempDir('executor-ssh-', teardown);
  const hostKey = keyPair(dir, 'host');
  const impostorKey = keyPair(dir, 'impostor');
  const userKey = keyPair(dir, 'user');
  const accepted = ssh2.utils.parseKey(fs.readFileSync(`${userKey}.pub`));
  if (accepted instanceof Error) throw accepted;
  const execs: string[] = [];

  const server = new ssh2.Server({ hostKeys: [fs.readFileSync(hostKey)] }, (client) => {
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      const known =
        ctx.method === 'publickey' &&
        ctx.username === 'tester' &&
        ctx.key.algo === accepted.type &&
        ctx.key.data.equals(accepted.getPublicSSH());
      if (!known || ctx.method !== 'publickey') return ctx.reject(['publickey']);
      // Without a signature the client only asks whether the key would do; with one it proves it holds it.
      if (!ctx.signature) return ctx.accept();
      return accepted.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) === true ? ctx.accept() : ctx.reject(['publickey']);
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('exec', (acceptExec, rejectExec, info) => {
          execs.push(info.command);
          if (info.command !== 'docker system dial-stdio') return rejectExec();
          const channel = acceptExec();
          const engine = net.connect(engineSocket);
          channel.pipe(engine).pipe(channel);
          engine.on('error', () => channel.destroy());
          channel.on('error', () => engine.destroy());
          channel.on('close', () => engine.destroy());
          engine.on('close', () => channel.end());
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  teardown.defer(() => new Promise((resolve) => server.close(() => resolve(undefined))));
  const { port } = server.address() as net.AddressInfo;

  // A real ssh-agent in the foreground (-D), holding the user's key; ready once it prints its socket.
  const agentSocket = path.join(dir, 'agent.sock');
  const agent = spawn('ssh-agent', ['-D', '-a', agentSocket], { stdio: ['ignore', 'pipe', 'pipe'] });
  teardown.killAfter(agent, { signal: 'SIGTERM' });
  await new Promise<void>((resolve, reject) => {
    let said = '';
    agent.stdout!.on('data', (chunk: Buffer) => {
      said += chunk.toString('utf8');
      if (said.includes('SSH_AUTH_SOCK')) resolve();
    });
    agent.once('exit', (code) => reject(new Error(`ssh-agent exited ${code}: ${said}`)));
  });
  execFileSync('ssh-add', ['-q', userKey], { env: { ...process.env, SSH_AUTH_SOCK: agentSocket }, stdio: 'ignore' });

  const publicLine = (file: string) => fs.readFileSync(`${file}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
  return {
    port,
    dockerHost: `ssh://tester@127.0.0.1:${port}`,
    agentSocket,
    knownHostsLine: `[127.0.0.1]:${port} ${publicLine(hostKey)}`,
    impostorLine: `[127.0.0.1]:${port} ${publicLine(impostorKey)}`,
    execs,
    home(lines) {
      const home = tempDir('executor-ssh-home-', teardown);
      fs.mkdirSync(path.join(home, '.ssh'), { mode: 0o700 });
      fs.writeFileSync(path.join(home, '.ssh', 'known_hosts'), lines.map((line) => `${line}\n`).join(''));
      return home;
    },
  };
}
