import https from 'node:https';
import os from 'node:os';
import { createRequire } from 'node:module';
import type Docker from 'dockerode';
import { ExecutorError } from '../../domain/errors.js';
import { engineTlsFailed, readTlsMaterial, resolveEngineAddress, tlsFailureOf, type EngineAddress } from './engine-address.js';
import { knownHostVerifier } from './known-hosts.js';

type HostKeyVerifier = ReturnType<typeof knownHostVerifier>;
import { engineInfo, identifyEngine, type EngineIdentity } from './engine-identity.js';

let dockerode: typeof Docker | undefined;

/**
 * dockerode (and the HTTP, SSH and stream modules under it) loads when the first client is made,
 * not with this module: the CLI printing a step, `--help` and a host that runs no container never pay for it.
 */
function dockerodeClass(): typeof Docker {
  dockerode ??= createRequire(import.meta.url)('dockerode') as typeof Docker;
  return dockerode;
}

/**
 * Loads dockerode now. A long-lived host calls it before it listens: loading takes a few hundred
 * milliseconds of synchronous work, which on the first container run under load would hold up every
 * request waiting behind it.
 */
export function preloadDockerode(): void {
  dockerodeClass();
}

/**
 * The seam between the core and a container engine. The core only ever asks for a dockerode
 * instance through `connectDocker`, which reads DOCKER_HOST and the TLS variables as the docker CLI
 * does (engine-address.ts) and refuses an engine it could not trust; a remote engine or Podman's
 * Docker-compatible socket works without code changes.
 */
export interface DockerClient {
  readonly docker: Docker;
  /** Where the engine is, as shown to the person: the socket path or the host URL. */
  readonly endpoint: string;
  /**
   * Whether the engine shares this machine's filesystem, so the scratch copy can be bind-mounted. For a
   * local socket, presumed until confirmEngineMachine has asked the engine which machine it is on.
   */
  readonly local: boolean;
  /** How the engine is reached and trusted (remote engines: TLS verified, SSH, or the insecure opt-in). */
  readonly address: EngineAddress;
}

/** Dockerode options built from the resolved address, never from dockerode's own reading of the environment (it sends TLS over ssh://, and plain HTTP when DOCKER_TLS_VERIFY is unset but certificates are given). */
function optionsFor(address: EngineAddress, env: NodeJS.ProcessEnv, verifier?: HostKeyVerifier): Docker.DockerOptions {
  // dockerode lays these options over what it read from process.env itself: every field it could take from there is named.
  const cleared = { host: undefined, port: undefined, protocol: undefined, ca: undefined, cert: undefined, key: undefined };
  if (address.transport === 'unix' || address.transport === 'npipe') return { ...cleared, socketPath: address.socketPath };
  if (address.transport === 'ssh')
    return {
      ...cleared,
      protocol: 'ssh',
      host: address.host,
      port: address.port,
      username: address.username,
      sshOptions: { agent: env.SSH_AUTH_SOCK, hostVerifier: verifier },
    };
  if (!address.certDir) return { ...cleared, protocol: 'http', host: address.host, port: address.port };
  const material = readTlsMaterial(address.certDir);
  return {
    ...cleared,
    protocol: 'https',
    host: address.host,
    port: address.port,
    ...material,
    // Only under the insecure opt-in (DOCKER_TLS without DOCKER_TLS_VERIFY): the engine's certificate is not checked.
    ...(address.tlsVerify === false ? { agent: new https.Agent({ rejectUnauthorized: false }) } : {}),
  };
}

/**
 * A client for the engine named by `dockerHost`, else DOCKER_HOST, else the local default. Throws
 * ENGINE_CONFIG_INVALID (bad address, TLS files missing) or ENGINE_INSECURE (TCP without verified TLS).
 */
export function connectDocker(dockerHost?: string, env: NodeJS.ProcessEnv = process.env): DockerClient {
  const address = resolveEngineAddress(dockerHost, env);
  const DockerClass = dockerodeClass();
  const unset = dockerHost === undefined && (env.DOCKER_HOST ?? '').trim() === '' && (process.env.DOCKER_HOST ?? '').trim() === '';
  // Unset, dockerode looks for Docker Desktop's ~/.docker/run/docker.sock before /var/run/docker.sock.
  const verifier = address.transport === 'ssh' ? knownHostVerifier(address.host!, address.port!, env) : undefined;
  const docker = unset ? new DockerClass() : new DockerClass(optionsFor(address, env, verifier));
  // A socket is only presumed to lead to this machine until the engine has said which machine it runs on (confirmEngineMachine).
  const machine: EngineMachine = { local: address.security === 'local-socket', settled: address.security !== 'local-socket' };
  const client: DockerClient = {
    docker,
    endpoint: address.endpoint,
    address,
    get local() {
      return machine.local;
    },
  };
  engineMachines.set(client, machine);
  if (verifier) hostKeyVerifiers.set(client, verifier);
  return client;
}

interface EngineMachine {
  local: boolean;
  settled: boolean;
  /** The engine's own host name (docker info's Name), once asked. */
  name?: string;
}

const engineMachines = new WeakMap<DockerClient, EngineMachine>();

/**
 * Settles whether an engine behind a local socket shares this machine's files. A socket can lead
 * elsewhere (forwarded with \`ssh -L\`, or this process in a container with the host's socket
 * mounted): bind-mounting the scratch copy there would give the command an empty folder the engine
 * made on its own machine. So the engine must name this machine (docker info's Name is its host
 * name), or be Docker Desktop (whose VM shares the host's folders); otherwise the copy travels as
 * archives, which works anywhere. EXECUTOR_ENGINE_SHARES_FILES=1 says a VM engine shares them.
 */
export async function confirmEngineMachine(client: DockerClient): Promise<void> {
  const machine = engineMachines.get(client);
  if (!machine || machine.settled) return;
  const info = (await engineCall(client, () => client.docker.info())) as { Name?: string; OperatingSystem?: string };
  machine.settled = true;
  machine.name = info.Name;
  machine.local =
    info.Name === os.hostname() || /docker desktop/i.test(info.OperatingSystem ?? '') || process.env.EXECUTOR_ENGINE_SHARES_FILES === '1';
}

/** The engine's machine name when it is not this one (a local socket to another machine), for status. */
function otherMachine(client: DockerClient): string | undefined {
  const machine = engineMachines.get(client);
  return machine?.settled && client.address.security === 'local-socket' && !machine.local ? (machine.name ?? 'unknown') : undefined;
}

/** The host key check of each ssh:// client, asked why ssh2's "Host denied" happened. */
const hostKeyVerifiers = new WeakMap<DockerClient, HostKeyVerifier>();

/** SSH refusals, by the words ssh2 uses (it gives them no code). */
function sshFailure(client: DockerClient, error: unknown): ExecutorError | undefined {
  if (client.address.transport !== 'ssh' || !(error instanceof Error)) return undefined;
  const details = { endpoint: client.endpoint };
  if (error.message.includes('Host denied')) {
    const verdict = hostKeyVerifiers.get(client)?.last;
    const name = client.address.port === 22 ? client.address.host : `[${client.address.host}]:${client.address.port}`;
    const why =
      verdict?.reason === 'key-mismatch'
        ? `its host key is not the one known_hosts lists for ${name}: someone may be in between, or the host was reinstalled. Check with its owner, then fix the line with \`ssh-keygen -R ${name}\``
        : verdict?.reason === 'revoked'
          ? `its host key is marked @revoked in known_hosts`
          : `${name} is not in known_hosts (${verdict?.files.join(', ') || 'none found'}). Connect once with \`ssh ${client.address.port === 22 ? '' : `-p ${client.address.port} `}${client.address.username}@${client.address.host}\`, check the fingerprint, and let ssh record it`;
    return new ExecutorError('ENGINE_INSECURE', `The SSH host at ${client.endpoint} was not trusted: ${why}.`, {
      ...details,
      reason: `ssh-host-${verdict?.reason ?? 'unknown-host'}`,
    });
  }
  if (/authentication methods failed/i.test(error.message))
    return new ExecutorError(
      'ENGINE_CONFIG_INVALID',
      `SSH to ${client.endpoint} refused every key the ssh-agent offered (${error.message}). Add the key the host accepts with \`ssh-add\`.`,
      { ...details, reason: 'ssh-auth-failed' },
    );
  return undefined;
}

/** Errors that mean "no engine answers here", as opposed to an engine refusing a request. */
export function isEngineUnreachable(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return ['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EACCES', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE'].includes(code ?? '');
}

export function sandboxUnavailable(client: DockerClient, error: unknown): ExecutorError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ExecutorError(
    'SANDBOX_UNAVAILABLE',
    `No Docker engine answers at ${client.endpoint} (${reason}). Start Docker (or set DOCKER_HOST), then run the step again with \`executor sandbox retry STEP_ID\`; it stays approved.`,
    { endpoint: client.endpoint },
  );
}

/** The typed error for a failure to reach the engine (TLS refused either way, or nobody listening), else undefined. */
function reachFailure(client: DockerClient, error: unknown): ExecutorError | undefined {
  const tls = tlsFailureOf(error);
  if (tls) return engineTlsFailed(client.address, tls, error);
  const ssh = sshFailure(client, error);
  if (ssh) return ssh;
  if (isEngineUnreachable(error)) return sandboxUnavailable(client, error);
  return undefined;
}

/** Runs an engine call, turning "nobody is listening" into SANDBOX_UNAVAILABLE and a failed TLS handshake into ENGINE_TLS_FAILED. */
export async function engineCall<T>(client: DockerClient, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw reachFailure(client, error) ?? error;
  }
}

/** How `sandbox status` names the way the engine is reached and trusted. */
export interface EngineAccess {
  transport: EngineAddress['transport'];
  security: EngineAddress['security'];
  /** TCP with TLS: whether the engine's certificate was checked against ca.pem (and ours presented). */
  tlsVerified?: boolean;
  certDir?: string;
  /** Remote engines get the workspace as archives; local ones have it bind-mounted. */
  workspace: 'bind-mount' | 'archive';
  /** A local socket whose engine runs on another machine (its name): the copy travels as archives. */
  engineMachine?: string;
  warning?: string;
}

export interface EngineStatus {
  reachable: boolean;
  endpoint: string;
  access?: EngineAccess;
  version?: string;
  apiVersion?: string;
  os?: string;
  /** Which engine it is and how it runs: "Podman 4.3.1 (rootful)", "Docker 20.10.24". */
  engine?: EngineIdentity;
  error?: string;
  /** The typed error's code when the engine was not reached (ENGINE_TLS_FAILED, ENGINE_INSECURE, SANDBOX_UNAVAILABLE…). */
  errorCode?: string;
}

/** A silent remote host (packets dropped) would otherwise hold `sandbox status` for minutes. */
const STATUS_TIMEOUT_MS = 15_000;

export function engineAccess(client: DockerClient): EngineAccess {
  const { address } = client;
  return {
    transport: address.transport,
    security: address.security,
    ...(address.transport === 'tcp' && address.certDir ? { tlsVerified: address.tlsVerify === true, certDir: address.certDir } : {}),
    workspace: client.local ? 'bind-mount' : 'archive',
    ...(otherMachine(client) ? { engineMachine: otherMachine(client) } : {}),
    ...(address.warning ? { warning: address.warning } : {}),
  };
}

/** The status of an engine connectDocker refused to reach (bad address, missing certificates, no verified TLS): nothing was asked of it. */
export function refusedEngineStatus(refusal: ExecutorError): EngineStatus {
  const named = refusal.details?.endpoint ?? refusal.details?.dockerHost ?? process.env.DOCKER_HOST ?? '';
  return { reachable: false, endpoint: String(named), error: refusal.message, errorCode: refusal.code };
}

export async function engineStatus(client: DockerClient): Promise<EngineStatus> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const silent = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error(`no answer within ${STATUS_TIMEOUT_MS / 1000} s`), { code: 'ETIMEDOUT' })),
        STATUS_TIMEOUT_MS,
      );
    });
    const version = await Promise.race([engineCall(client, () => client.docker.version()), silent]);
    await Promise.race([confirmEngineMachine(client), silent]);
    return {
      reachable: true,
      endpoint: client.endpoint,
      access: engineAccess(client),
      version: version.Version,
      apiVersion: version.ApiVersion,
      os: `${version.Os}/${version.Arch}`,
      engine: identifyEngine(version, await engineInfo(client.docker)),
    };
  } catch (error) {
    const typed = error instanceof ExecutorError ? error : reachFailure(client, error);
    return {
      reachable: false,
      endpoint: client.endpoint,
      access: engineAccess(client),
      error: (typed ?? (error as Error)).message ?? String(error),
      ...(typed ? { errorCode: typed.code } : {}),
    };
  } finally {
    clearTimeout(timer);
  }
}
