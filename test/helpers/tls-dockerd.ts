import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { tempDir } from './temp-dirs.js';
import type { Teardown } from './teardown.js';

/**
 * A second, real `dockerd` serving its API over TCP with TLS and client-certificate checks, with
 * certificates made here by openssl, beside the machine's own engine (its own data root, exec root,
 * pid file and socket; no bridge, no iptables, so it touches neither the other engine nor the
 * host's network). For testing Executor against a remote engine the way a person would set one up.
 */

/** A folder as DOCKER_CERT_PATH expects it: ca.pem, cert.pem, key.pem. */
export interface CertDirs {
  /** The CA that signed the engine's certificate, and a client certificate it signed: what works. */
  good: string;
  /** Another CA's ca.pem (so the engine's certificate is not vouched for), with a good client certificate. */
  wrongCa: string;
  /** The right ca.pem, with a client certificate the engine's CA never signed. */
  wrongClient: string;
}

export interface TlsEngine {
  /** tcp://127.0.0.1:PORT */
  host: string;
  port: number;
  /** The engine's own unix socket (the test loads the image through it). */
  socket: string;
  certs: CertDirs;
  /** DOCKER_HOST and the TLS variables for a cert folder, as a person would export them. */
  env(certDir: string): NodeJS.ProcessEnv;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA (self-signed) in `dir`: ca.pem and ca-key.pem. */
function makeCa(dir: string, name: string): void {
  fs.mkdirSync(dir, { recursive: true });
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-subj', `/CN=${name}`],
    dir,
  );
}

/** A certificate signed by the CA in `caDir`, written as `${stem}.pem` and `${stem}-key.pem` in `dir`. */
function signCert(caDir: string, dir: string, stem: string, subject: string, extensions: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const ext = path.join(dir, `${stem}.ext`);
  fs.writeFileSync(ext, extensions);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${stem}-key.pem`, '-out', `${stem}.csr`, '-subj', subject], dir);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${stem}.csr`,
      '-CA',
      path.join(caDir, 'ca.pem'),
      '-CAkey',
      path.join(caDir, 'ca-key.pem'),
      '-CAcreateserial',
      '-CAserial',
      path.join(dir, `${stem}.srl`),
      '-out',
      `${stem}.pem`,
      '-days',
      '2',
      '-extfile',
      ext,
    ],
    dir,
  );
}

/** A DOCKER_CERT_PATH folder from a CA's ca.pem and a client certificate. */
function certFolder(dir: string, caPem: string, certPem: string, keyPem: string): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(caPem, path.join(dir, 'ca.pem'));
  fs.copyFileSync(certPem, path.join(dir, 'cert.pem'));
  fs.copyFileSync(keyPem, path.join(dir, 'key.pem'));
  return dir;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Mounts a killed engine may have left under `dir` (overlay layers, its exec root), deepest first, so the folder can go. */
function unmountUnder(dir: string): void {
  const mounts = fs
    .readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((point): point is string => point !== undefined && point.startsWith(dir + path.sep))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) {
    try {
      execFileSync('umount', ['-l', point], { stdio: 'ignore' });
    } catch {
      // Already gone with its parent.
    }
  }
}

/**
 * Starts the engine and resolves once it says its TCP API listens (its own log line, not a sleep),
 * then once it answers over TLS. Stopped (SIGTERM to its process group, waited for) and its folders
 * removed at `teardown`.
 */
export async function startTlsDockerd(teardown: Teardown, options: { hostname?: string } = {}): Promise<TlsEngine> {
  const base = tempDir('executor-tlsd-', teardown);
  teardown.defer(() => unmountUnder(base));
  const pki = path.join(base, 'pki');
  makeCa(path.join(pki, 'ca'), 'executor-test-ca');
  makeCa(path.join(pki, 'other-ca'), 'executor-test-impostor-ca');
  signCert(
    path.join(pki, 'ca'),
    path.join(pki, 'server'),
    'server',
    '/CN=127.0.0.1',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  signCert(path.join(pki, 'ca'), path.join(pki, 'client'), 'client', '/CN=executor-client', 'extendedKeyUsage=clientAuth\n');
  signCert(path.join(pki, 'other-ca'), path.join(pki, 'stranger'), 'client', '/CN=stranger', 'extendedKeyUsage=clientAuth\n');
  const caPem = path.join(pki, 'ca', 'ca.pem');
  const clientPem = path.join(pki, 'client', 'client.pem');
  const clientKey = path.join(pki, 'client', 'client-key.pem');
  const certs: CertDirs = {
    good: certFolder(path.join(base, 'certs-good'), caPem, clientPem, clientKey),
    wrongCa: certFolder(path.join(base, 'certs-wrong-ca'), path.join(pki, 'other-ca', 'ca.pem'), clientPem, clientKey),
    wrongClient: certFolder(
      path.join(base, 'certs-wrong-client'),
      caPem,
      path.join(pki, 'stranger', 'client.pem'),
      path.join(pki, 'stranger', 'client-key.pem'),
    ),
  };

  const port = await freePort();
  const socket = path.join(base, 'engine.sock');
  const args = [
    '--data-root',
    path.join(base, 'data'),
    '--exec-root',
    path.join(base, 'exec'),
    '--pidfile',
    path.join(base, 'dockerd.pid'),
    '-H',
    `unix://${socket}`,
    '-H',
    `tcp://127.0.0.1:${port}`,
    '--tlsverify',
    '--tlscacert',
    caPem,
    '--tlscert',
    path.join(pki, 'server', 'server.pem'),
    '--tlskey',
    path.join(pki, 'server', 'server-key.pem'),
    '--bridge=none',
    '--iptables=false',
    '--ip6tables=false',
    '--ip-masq=false',
  ];
  // Its own process group: the teardown waits until dockerd and the containerd it started are gone.
  // With a hostname, in a UTS namespace of its own: the engine then names another machine (docker info's Name), as a remote one would.
  const engine = options.hostname
    ? spawn('unshare', ['--uts', 'sh', '-c', 'hostname "$0" && exec dockerd "$@"', options.hostname, ...args], {
        detached: true,
        stdio: ['ignore', 'ignore', 'pipe'],
      })
    : spawn('dockerd', args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  teardown.killAfter(engine, { signal: 'SIGTERM', group: true });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const listening = `API listen on 127.0.0.1:${port}`;
    engine.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString('utf8');
      if (log.includes(listening)) resolve();
    });
    engine.once('error', reject);
    engine.once('exit', (code, signal) => reject(new Error(`dockerd exited (${code ?? signal}) before it listened:\n${log.slice(-4000)}`)));
  });
  // Keep reading its log so a full pipe never stalls it.
  engine.stderr!.resume();
  const host = `tcp://127.0.0.1:${port}`;
  return {
    host,
    port,
    socket,
    certs,
    env: (certDir) => ({ DOCKER_HOST: host, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certDir }),
  };
}

/** Copies an image from the machine's engine into the test engine (docker save | docker load over its own socket). */
export function copyImageInto(engine: TlsEngine, image: string): void {
  execFileSync('sh', ['-c', `docker save "$1" | docker -H "unix://$2" load`, 'copy-image', image, engine.socket], {
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 240_000,
  });
}
