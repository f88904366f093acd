import type Docker from 'dockerode';

/** Which engine answers on the Docker API, as `sandbox status` names it: "Podman 4.3.1 (rootful)", "Docker 20.10.24". */
export interface EngineIdentity {
  /** Podman speaks the Docker API too; everything else that does is taken for Docker. */
  name: 'Docker' | 'Podman';
  version: string;
  /** Whether the engine runs as an ordinary user (its containers' root is that user, mapped); undefined: it did not say. */
  rootless?: boolean;
  label: string;
}

interface VersionAnswer {
  Version?: string;
  Components?: { Name?: string; Version?: string }[];
}

interface InfoAnswer {
  /** Podman's compat /info says it outright. */
  Rootless?: boolean;
  /** Docker lists `name=rootless` here when its daemon runs rootless. */
  SecurityOptions?: string[];
  /** "1" or "2" (Podman and Docker both answer it). */
  CgroupVersion?: string | number;
}

/**
 * Names the engine from its /version answer (Podman lists a "Podman Engine" component; Docker an
 * "Engine") and, from /info, whether it runs rootless. Podman is always named with its mode, since
 * rootful and rootless Podman differ in what a container's uid maps to on the host; Docker only when
 * it is rootless, the unusual case.
 */
export function identifyEngine(version: VersionAnswer, info: InfoAnswer | undefined): EngineIdentity {
  const podman = version.Components?.find((component) => /podman/i.test(component.Name ?? ''));
  const name = podman ? 'Podman' : 'Docker';
  const number = (podman?.Version ?? version.Version ?? 'unknown').trim();
  const rootless =
    info === undefined
      ? undefined
      : info.Rootless === true || (info.SecurityOptions ?? []).some((option) => /(^|,)name=rootless(,|$)/.test(option));
  const mode = rootless === undefined ? '' : name === 'Podman' ? ` (${rootless ? 'rootless' : 'rootful'})` : rootless ? ' (rootless)' : '';
  return { name, version: number, ...(rootless === undefined ? {} : { rootless }), label: `${name} ${number}${mode}` };
}

/** The engine's /info, or undefined when it does not answer it (the name then comes from /version alone). */
export async function engineInfo(docker: Docker): Promise<InfoAnswer | undefined> {
  return (docker.info() as Promise<InfoAnswer>).catch(() => undefined);
}

/**
 * Why this engine cannot hold a container to the sandbox's limits, or null when it can. A rootless
 * engine on cgroup v1 gets no cgroup of its own to write: it accepts PidsLimit and Memory, then runs
 * the container without them (pids.max "max", a memory hog not stopped). Its /info does not say so
 * (Podman answers PidsLimit: true), so the combination is read from Rootless and CgroupVersion.
 */
export function limitsUnenforceable(info: InfoAnswer | undefined): string | null {
  if (info === undefined) return null;
  const rootless = info.Rootless === true || (info.SecurityOptions ?? []).some((option) => /(^|,)name=rootless(,|$)/.test(option));
  if (!rootless || String(info.CgroupVersion ?? '') !== '1') return null;
  return "it runs rootless on cgroup v1, where it cannot apply the sandbox's process and memory limits (it would run the container without them)";
}
