import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';

/**
 * Where the engine is and how Executor may trust it, read the way the docker CLI reads it:
 * DOCKER_HOST (unix://, npipe://, tcp://, ssh://, or a bare host:port meaning tcp), DOCKER_TLS_VERIFY
 * (any non-empty value verifies, as in the CLI), DOCKER_TLS (TLS without verification) and
 * DOCKER_CERT_PATH (default ~/.docker) holding ca.pem, cert.pem and key.pem.
 *
 * Stricter than the CLI where the CLI's leniency hands root away: an engine's API is root on its
 * machine, so TCP without verified TLS, and TLS without a client certificate, are refused unless
 * EXECUTOR_ALLOW_INSECURE_ENGINE=1 says the person accepts that.
 */
export type EngineTransport = 'unix' | 'npipe' | 'tcp' | 'ssh';

/**
 * `local-socket`: a socket file or pipe on this machine, guarded by its file permissions.
 * `tls-verified`: TCP with TLS, the engine's certificate checked against ca.pem and ours presented.
 * `ssh`: the engine's own socket reached through SSH, the host key checked against known_hosts.
 * `insecure`: TCP without verified TLS, allowed only because EXECUTOR_ALLOW_INSECURE_ENGINE=1.
 */
export type EngineSecurity = 'local-socket' | 'tls-verified' | 'ssh' | 'insecure';

export interface EngineAddress {
  /** As shown to the person: the socket path or the host URL. */
  endpoint: string;
  transport: EngineTransport;
  security: EngineSecurity;
  socketPath?: string;
  host?: string;
  port?: number;
  username?: string;
  /** TCP with TLS: the folder the three PEM files come from. */
  certDir?: string;
  /** Whether the engine's certificate is checked (false only under the insecure opt-in with DOCKER_TLS). */
  tlsVerify?: boolean;
  /** What the person must know about this engine's safety, said loudly by `sandbox status`. */
  warning?: string;
}

export const INSECURE_OPT_IN = 'EXECUTOR_ALLOW_INSECURE_ENGINE';

const CERT_FILES = { ca: 'ca.pem', cert: 'cert.pem', key: 'key.pem' } as const;

function configInvalid(message: string, details: Record<string, unknown>): ExecutorError {
  return new ExecutorError('ENGINE_CONFIG_INVALID', message, details);
}

function set(value: string | undefined): boolean {
  return value !== undefined && value !== '';
}

/** The local default when DOCKER_HOST is unset (dockerode also tries Docker Desktop's ~/.docker/run/docker.sock). */
export function defaultEndpoint(): string {
  return process.platform === 'win32' ? 'npipe:////./pipe/docker_engine' : 'unix:///var/run/docker.sock';
}

/** Reads the engine's address from DOCKER_HOST (or the one given) and the TLS variables; throws ENGINE_CONFIG_INVALID / ENGINE_INSECURE. */
export function resolveEngineAddress(dockerHost: string | undefined, env: NodeJS.ProcessEnv = process.env): EngineAddress {
  const raw = (dockerHost ?? env.DOCKER_HOST ?? '').trim();
  if (raw === '') {
    const endpoint = defaultEndpoint();
    return { endpoint, transport: endpoint.startsWith('npipe:') ? 'npipe' : 'unix', security: 'local-socket' };
  }
  // The CLI reads a bare "host:port" as tcp; a bare path as a socket is what older tools wrote.
  const withScheme = raw.startsWith('/') ? `unix://${raw}` : raw.includes('://') ? raw : `tcp://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw configInvalid(
      `DOCKER_HOST="${raw}" is not an engine address. Use unix:///path/to/docker.sock, tcp://host:2376 (with TLS) or ssh://user@host.`,
      {
        dockerHost: raw,
      },
    );
  }
  switch (url.protocol) {
    case 'unix:':
    case 'npipe:': {
      // The path is everything after the scheme, as the CLI takes it (a URL parser would read unix://run/x as host "run").
      const socketPath = withScheme.slice(url.protocol.length + 2);
      if (socketPath === '' || socketPath === '/')
        throw configInvalid(`DOCKER_HOST="${raw}" names no socket. Use unix:///var/run/docker.sock or the path your engine listens on.`, {
          dockerHost: raw,
        });
      return { endpoint: raw, transport: url.protocol === 'unix:' ? 'unix' : 'npipe', security: 'local-socket', socketPath };
    }
    case 'ssh:':
      return sshAddress(raw, url, env);
    case 'tcp:':
    case 'http:':
    case 'https:':
      return tcpAddress(raw, url, env);
    default:
      throw configInvalid(
        `DOCKER_HOST="${raw}" uses ${url.protocol}//, which Executor cannot reach. Use unix://, tcp:// (with TLS) or ssh://.`,
        {
          dockerHost: raw,
        },
      );
  }
}

function tcpAddress(raw: string, url: URL, env: NodeJS.ProcessEnv): EngineAddress {
  if (url.hostname === '') throw configInvalid(`DOCKER_HOST="${raw}" names no host. Use tcp://host:2376.`, { dockerHost: raw });
  const verify = set(env.DOCKER_TLS_VERIFY);
  const tls = verify || set(env.DOCKER_TLS) || url.protocol === 'https:';
  const port = url.port ? Number(url.port) : tls ? 2376 : 2375;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const endpoint = `tcp://${url.host}${url.port ? '' : `:${port}`}`;
  const insecureAllowed = env[INSECURE_OPT_IN] === '1';
  const base = { endpoint, transport: 'tcp' as const, host, port };
  if (!tls) {
    if (!insecureAllowed)
      throw new ExecutorError(
        'ENGINE_INSECURE',
        `DOCKER_HOST=${endpoint} is plain TCP: anyone who can reach that port controls the engine's machine as root, and sees every workspace sent to it. Serve the engine with TLS (dockerd --tlsverify) and set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH to the folder with ca.pem, cert.pem and key.pem; or use ssh://user@host. (${INSECURE_OPT_IN}=1 accepts the risk.)`,
        { endpoint, reason: 'plain-tcp' },
      );
    return {
      ...base,
      security: 'insecure',
      warning: `plain TCP, no TLS: anyone who can reach ${endpoint} controls that machine as root (allowed by ${INSECURE_OPT_IN}=1)`,
    };
  }
  const certDir = set(env.DOCKER_CERT_PATH) ? path.resolve(env.DOCKER_CERT_PATH!) : path.join(os.homedir(), '.docker');
  if (!verify) {
    if (!insecureAllowed)
      throw new ExecutorError(
        'ENGINE_INSECURE',
        `DOCKER_TLS is set without DOCKER_TLS_VERIFY: the engine at ${endpoint} would not be checked, so whoever answers there would be sent every workspace. Set DOCKER_TLS_VERIFY=1 with ca.pem in ${certDir}. (${INSECURE_OPT_IN}=1 accepts the risk.)`,
        { endpoint, reason: 'tls-not-verified' },
      );
    return {
      ...base,
      security: 'insecure',
      certDir,
      tlsVerify: false,
      warning: `TLS without verifying the engine's certificate: whoever answers at ${endpoint} gets the workspaces (allowed by ${INSECURE_OPT_IN}=1)`,
    };
  }
  return { ...base, security: 'tls-verified', certDir, tlsVerify: true };
}

function sshAddress(raw: string, url: URL, env: NodeJS.ProcessEnv): EngineAddress {
  if (url.hostname === '') throw configInvalid(`DOCKER_HOST="${raw}" names no host. Use ssh://user@host.`, { dockerHost: raw });
  if (url.pathname !== '' && url.pathname !== '/')
    throw configInvalid(
      `DOCKER_HOST="${raw}" has a path; ssh:// takes none (the remote engine is reached with \`docker system dial-stdio\`).`,
      {
        dockerHost: raw,
      },
    );
  if (!set(env.SSH_AUTH_SOCK))
    throw configInvalid(
      `DOCKER_HOST=${raw} needs an ssh-agent holding your key (SSH_AUTH_SOCK is not set): start one with \`eval $(ssh-agent)\` and \`ssh-add\`, then start Executor from that shell.`,
      { dockerHost: raw, reason: 'no-ssh-agent' },
    );
  return {
    endpoint: raw,
    transport: 'ssh',
    security: 'ssh',
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : 22,
    username: url.username ? decodedOr(url.username) : os.userInfo().username,
  };
}

/** A URL part percent-decoded, or as written when its escapes are malformed. */
function decodedOr(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export interface TlsMaterial {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** The three PEM files of a TLS engine, each checked to exist and to hold PEM; throws ENGINE_CONFIG_INVALID naming the file. */
export function readTlsMaterial(certDir: string): TlsMaterial {
  const read = (name: string, marker: RegExp): Buffer => {
    const file = path.join(certDir, name);
    let content: Buffer;
    try {
      content = fs.readFileSync(file);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw configInvalid(
        code === 'ENOENT'
          ? `${file} is missing. DOCKER_CERT_PATH (${certDir}) must hold ca.pem (the CA that signed the engine's certificate), cert.pem and key.pem (your client certificate and its key): an engine that asks for no client certificate is open to everyone.`
          : `${file} cannot be read (${code ?? (error as Error).message}). Check its permissions.`,
        { file, certDir, reason: code === 'ENOENT' ? 'cert-file-missing' : 'cert-file-unreadable' },
      );
    }
    if (!marker.test(content.toString('latin1')))
      throw configInvalid(`${file} holds no PEM ${name === 'key.pem' ? 'private key' : 'certificate'}.`, {
        file,
        certDir,
        reason: 'cert-file-not-pem',
      });
    return content;
  };
  return {
    ca: read(CERT_FILES.ca, /-----BEGIN CERTIFICATE-----/),
    cert: read(CERT_FILES.cert, /-----BEGIN CERTIFICATE-----/),
    key: read(CERT_FILES.key, /-----BEGIN [A-Z ]*PRIVATE KEY-----/),
  };
}

/** TLS failures by Node's code: either the engine's certificate is not trusted, or the engine refused ours. */
const ENGINE_CERT_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export type TlsFailure = 'engine-certificate-untrusted' | 'client-certificate-refused' | 'handshake-failed';

/** Which side of a TLS handshake failed, or undefined when the error is not a TLS failure. */
export function tlsFailureOf(error: unknown): TlsFailure | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (ENGINE_CERT_CODES.has(code)) return 'engine-certificate-untrusted';
  if (
    /^ERR_SSL_.*ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|ACCESS_DENIED)$/.test(
      code,
    )
  )
    return 'client-certificate-refused';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'handshake-failed';
  return undefined;
}

export function engineTlsFailed(address: Pick<EngineAddress, 'endpoint' | 'certDir'>, failure: TlsFailure, error: unknown): ExecutorError {
  const said = (error instanceof Error ? error.message : String(error)).trim();
  const what = {
    'engine-certificate-untrusted': `the engine's certificate is not one ca.pem in ${address.certDir} vouches for, or it does not name this host (${said}). Check DOCKER_CERT_PATH and the address you connect to`,
    'client-certificate-refused': `the engine refused the client certificate cert.pem in ${address.certDir} (${said}). It must be signed by the CA the engine was started with (dockerd --tlscacert)`,
    'handshake-failed': `the TLS handshake failed (${said}). Is the engine serving TLS at this address?`,
  }[failure];
  return new ExecutorError('ENGINE_TLS_FAILED', `TLS with the engine at ${address.endpoint} failed: ${what}.`, {
    endpoint: address.endpoint,
    certDir: address.certDir,
    reason: failure,
  });
}
