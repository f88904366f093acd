import { createRequire } from 'node:module';
import type Docker from 'dockerode';
import { ExecutorError } from '../../domain/errors.js';
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
 * instance through `connectDocker`; dockerode itself reads DOCKER_HOST (unix socket, tcp, ssh,
 * npipe), so a remote engine or Podman's Docker-compatible socket works without code changes.
 */
export interface DockerClient {
  readonly docker: Docker;
  /** Where the engine is, as shown to the person: the socket path or the host URL. */
  readonly endpoint: string;
  /** Whether the engine shares this machine's filesystem, so the scratch copy can be bind-mounted. */
  readonly local: boolean;
}

/** Dockerode options for an explicit engine address; without one, dockerode reads DOCKER_HOST and the TLS variables itself. */
function optionsFor(dockerHost: string): Docker.DockerOptions {
  const url = new URL(dockerHost);
  if (url.protocol === 'unix:' || url.protocol === 'npipe:') return { socketPath: decodeURIComponent(url.pathname) };
  if (url.protocol === 'ssh:')
    return { protocol: 'ssh', host: url.hostname, port: url.port ? Number(url.port) : 22, username: url.username || undefined };
  const tls = process.env.DOCKER_TLS_VERIFY === '1' || url.port === '2376';
  return { protocol: tls ? 'https' : 'http', host: url.hostname, port: url.port ? Number(url.port) : tls ? 2376 : 2375 };
}

export function connectDocker(dockerHost?: string): DockerClient {
  const fromEnvironment = dockerHost === undefined;
  const address = dockerHost ?? process.env.DOCKER_HOST;
  const endpoint =
    address && address.length > 0
      ? address
      : process.platform === 'win32'
        ? 'npipe:////./pipe/docker_engine'
        : 'unix:///var/run/docker.sock';
  // From the environment, dockerode applies DOCKER_HOST together with DOCKER_TLS_VERIFY / DOCKER_CERT_PATH.
  const DockerClass = dockerodeClass();
  const docker = fromEnvironment ? new DockerClass() : new DockerClass(optionsFor(endpoint));
  const local = endpoint.startsWith('unix://') || endpoint.startsWith('npipe://') || endpoint.startsWith('/');
  return { docker, endpoint, local };
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

/** Runs an engine call, turning "nobody is listening" into SANDBOX_UNAVAILABLE. */
export async function engineCall<T>(client: DockerClient, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isEngineUnreachable(error)) throw sandboxUnavailable(client, error);
    throw error;
  }
}

export interface EngineStatus {
  reachable: boolean;
  endpoint: string;
  version?: string;
  apiVersion?: string;
  os?: string;
  /** Which engine it is and how it runs: "Podman 4.3.1 (rootful)", "Docker 20.10.24". */
  engine?: EngineIdentity;
  error?: string;
}

export async function engineStatus(client: DockerClient): Promise<EngineStatus> {
  try {
    const version = await client.docker.version();
    return {
      reachable: true,
      endpoint: client.endpoint,
      version: version.Version,
      apiVersion: version.ApiVersion,
      os: `${version.Os}/${version.Arch}`,
      engine: identifyEngine(version, await engineInfo(client.docker)),
    };
  } catch (error) {
    return { reachable: false, endpoint: client.endpoint, error: error instanceof Error ? error.message : String(error) };
  }
}
