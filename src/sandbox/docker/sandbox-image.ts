import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';
import { engineCall, type DockerClient } from './docker-client.js';
import { makeTempArea } from './temp-areas.js';

const PACKAGE_JSON = new URL('../../../package.json', import.meta.url);
export const DOCKERFILE_DIR = new URL('../../../build/sandbox/', import.meta.url);

/** The uid/gid commands run as inside the container: not root, and not any host user's usual id. */
export const SANDBOX_UID = 10001;
export const SANDBOX_GID = 10001;
export const IMAGE_LABEL = 'dev.executor.sandbox-image';
const PYTHON_LABEL = 'dev.executor.sandbox-python';
/** What the image holds, in words (`sh (busybox …), node …, npm …, git …`): what `sandbox status` lists. */
const TOOLS_LABEL = 'dev.executor.sandbox-tools';

function appVersion(): string {
  return (JSON.parse(fs.readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
}

/** An image reference as `EXECUTOR_SANDBOX_IMAGE` may name one: `name:tag`, lower-case name parts. */
const IMAGE_REFERENCE = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*:[\w][\w.-]{0,127}$/;

/**
 * Pinned per app version: an update never silently runs commands in an image built for another one.
 * `EXECUTOR_SANDBOX_IMAGE` names another (a build to try without replacing the working one); a
 * value that is not a `name:tag` reference is ignored.
 */
export function sandboxImageTag(version?: string): string {
  const chosen = process.env.EXECUTOR_SANDBOX_IMAGE;
  if (version === undefined && chosen && IMAGE_REFERENCE.test(chosen)) return chosen;
  return `executor-sandbox:${version ?? appVersion()}`;
}

export interface ImageInfo {
  tag: string;
  present: boolean;
  /** The image id (sha256 of its config): what audit records carry, since an imported image has no registry digest. */
  digest?: string;
  sizeBytes?: number;
  builtBy?: string;
  /** Whether the image has python3 (the offline path includes it only when this machine has it). */
  python?: boolean;
  /** What the image holds, as its builder listed it (absent for an image Executor did not build). */
  tools?: string;
  /** The user the image's own config names (`USER`); empty or absent: root. */
  user?: string;
  /** The image's ONBUILD triggers: instructions a build FROM it runs first (an `ONBUILD RUN` is code). */
  onBuild?: string[];
  createdAt?: string;
}

/** The digest each image tag had when an engine last answered for it: what the audit log names as a record's sandbox. */
const seenDigests = new Map<string, string>();

/** The sandbox image's digest as the engine last gave it to this process (undefined: not asked yet, or absent). */
export function lastSeenImageDigest(tag: string = sandboxImageTag()): string | undefined {
  return seenDigests.get(tag);
}

export async function imageInfo(client: DockerClient, tag: string = sandboxImageTag()): Promise<ImageInfo> {
  return engineCall(client, async () => {
    try {
      const inspected = await client.docker.getImage(tag).inspect();
      seenDigests.set(tag, inspected.Id);
      return {
        tag,
        present: true,
        digest: inspected.Id,
        sizeBytes: inspected.Size,
        builtBy: inspected.Config?.Labels?.[IMAGE_LABEL],
        python: inspected.Config?.Labels?.[PYTHON_LABEL] === 'yes',
        ...(inspected.Config?.Labels?.[TOOLS_LABEL] ? { tools: inspected.Config.Labels[TOOLS_LABEL] } : {}),
        user: inspected.Config?.User ?? '',
        onBuild: (inspected.Config as { OnBuild?: string[] | null } | undefined)?.OnBuild ?? [],
        createdAt: inspected.Created,
      };
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) {
        seenDigests.delete(tag);
        return { tag, present: false };
      }
      throw error;
    }
  });
}

/** The image a run uses; a missing image is a typed error that names the command that builds it. */
export async function requireImage(client: DockerClient, tag: string = sandboxImageTag()): Promise<ImageInfo & { digest: string }> {
  const info = await imageInfo(client, tag);
  if (!info.present || !info.digest) {
    throw new ExecutorError('SANDBOX_IMAGE_MISSING', `The sandbox image ${tag} is not built yet. Run \`executor sandbox image build\`.`, {
      tag,
    });
  }
  return info as ImageInfo & { digest: string };
}

export type BuildPath = 'cached' | 'offline-host-rootfs' | 'dockerfile';

export interface BuildResult extends ImageInfo {
  path: BuildPath;
  seconds: number;
  notes: string[];
}

/** Shared libraries binaries need, as absolute paths (from one ldd, which the host's loader answers). */
function sharedLibraries(...binaries: string[]): string[] {
  if (binaries.length === 0) return [];
  const result = spawnSync('ldd', binaries, { encoding: 'utf8' });
  // With several files ldd exits 1 when one of them is no dynamic program; the others are still listed.
  if (result.status !== 0 && binaries.length === 1) return [];
  const libs: string[] = [];
  for (const line of result.stdout.split('\n')) {
    const arrow = line.match(/=>\s+(\/\S+)/);
    const bare = line.trim().match(/^(\/\S+)\s+\(/);
    const lib = arrow?.[1] ?? bare?.[1];
    if (lib) libs.push(lib);
  }
  return libs;
}

function copyInto(stage: string, hostPath: string, imagePath: string = hostPath): void {
  const target = path.join(stage, imagePath);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.copyFileSync(fs.realpathSync(hostPath), target);
  fs.chmodSync(target, fs.statSync(hostPath).mode & 0o7777);
}

// Parts of the standard library a sandboxed script never needs; leaving them out saves ~25 MB.
const PYTHON_SKIP = new Set(['test', 'idlelib', 'tkinter', 'turtledemo', 'ensurepip', 'lib2to3', 'pydoc_data', '__phello__']);

/**
 * Every folder 0755 and every file readable (and, where its owner may run it, runnable) by all: the
 * command that builds the image runs under Executor's private umask (0077), which would leave the
 * folders and written files of the root filesystem closed to the sandbox's non-root user, and
 * even to the runtime resolving /bin/sh.
 */
function openToEveryone(dir: string): void {
  fs.chmodSync(dir, 0o755);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const entryPath = path.join(dir, entry.name);
    if (entry.isDirectory()) openToEveryone(entryPath);
    else if (entry.isFile()) {
      const mode = fs.statSync(entryPath).mode & 0o777;
      fs.chmodSync(entryPath, mode | 0o444 | (mode & 0o100 ? 0o111 : 0));
    }
  }
}

/**
 * Assembles a root filesystem from this machine's own binaries — node and its libraries, a static
 * busybox for sh and coreutils, python3 and its standard library when present — so that an image
 * can be built where no registry is reachable.
 */
export function assembleHostRootfs(stage: string): { python: boolean; tools: string; hostTrees: HostTree[]; notes: string[] } {
  const notes: string[] = [];
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((candidate) => fs.existsSync(candidate));
  if (!busybox) {
    throw new ExecutorError(
      'SANDBOX_IMAGE_MISSING',
      'The offline image needs a static busybox (Debian: apt-get install busybox-static).',
      {},
    );
  }
  if (sharedLibraries(busybox).length > 0) notes.push(`${busybox} is dynamically linked; its libraries were copied too.`);
  copyInto(stage, busybox, '/bin/busybox');
  for (const lib of sharedLibraries(busybox)) copyInto(stage, lib);
  const applets = spawnSync(busybox, ['--list'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((name) => /^[\w.[-]+$/.test(name));
  for (const applet of applets) {
    if (applet === 'busybox') continue;
    fs.symlinkSync('/bin/busybox', path.join(stage, 'bin', applet));
  }
  fs.mkdirSync(path.join(stage, 'usr/bin'), { recursive: true });
  fs.symlinkSync('/bin/busybox', path.join(stage, 'usr/bin/env'));

  const nodeBinary = process.execPath;
  copyInto(stage, nodeBinary, '/usr/local/bin/node');
  for (const lib of sharedLibraries(nodeBinary)) copyInto(stage, lib);

  let python = false;
  let pythonTree: HostTree | undefined;
  const pythonBinary = ['/usr/bin/python3', '/usr/local/bin/python3'].find((candidate) => fs.existsSync(candidate));
  if (pythonBinary) {
    const real = fs.realpathSync(pythonBinary);
    const version = spawnSync(real, ['-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'], {
      encoding: 'utf8',
    }).stdout.trim();
    const stdlib = [`/usr/lib/python${version}`, `/usr/local/lib/python${version}`].find((dir) => fs.existsSync(path.join(dir, 'os.py')));
    if (version && stdlib) {
      copyInto(stage, real, `/usr/bin/python${version}`);
      fs.symlinkSync(`python${version}`, path.join(stage, 'usr/bin/python3'));
      fs.symlinkSync(`python${version}`, path.join(stage, 'usr/bin/python'));
      pythonTree = { path: stdlib, exclude: [...PYTHON_SKIP].map((name) => path.join(stdlib, name)) };
      const extensions = path.join(stdlib, 'lib-dynload');
      const needed = new Set(sharedLibraries(real));
      if (fs.existsSync(extensions)) {
        for (const lib of sharedLibraries(...fs.readdirSync(extensions).map((name) => path.join(extensions, name)))) needed.add(lib);
      }
      for (const lib of needed) if (!fs.existsSync(path.join(stage, lib))) copyInto(stage, lib);
      python = true;
    } else {
      notes.push(`python3 at ${pythonBinary} has no standard library where expected; the image has no python (use the Dockerfile path).`);
    }
  } else {
    notes.push('No python3 on this machine: the image has no python (use the Dockerfile path in build/sandbox/ for it).');
  }

  const npm = hostNpm(stage, nodeBinary);
  if (!npm) notes.push("No npm beside this machine's node: the image has no npm or npx.");
  const git = hostGit(stage);
  if (!git) notes.push('No git on this machine (/usr/bin/git): the image has no git.');
  const hostTrees = [...(pythonTree ? [pythonTree] : []), ...(npm ? [npm.tree] : []), ...(git?.trees ?? [])];

  const certs = '/etc/ssl/certs/ca-certificates.crt';
  if (fs.existsSync(certs)) copyInto(stage, certs);
  fs.mkdirSync(path.join(stage, 'etc'), { recursive: true });
  fs.writeFileSync(
    path.join(stage, 'etc/passwd'),
    `root:x:0:0:root:/root:/bin/sh\nsandbox:x:${SANDBOX_UID}:${SANDBOX_GID}:sandbox:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n`,
  );
  fs.writeFileSync(path.join(stage, 'etc/group'), `root:x:0:\nsandbox:x:${SANDBOX_GID}:\nnogroup:x:65534:\n`);
  fs.writeFileSync(path.join(stage, 'etc/hosts'), '127.0.0.1 localhost\n');
  // The workspace is a throwaway copy owned by whichever uid the run gets: git's ownership check
  // (made for repositories other users on a shared machine own) would refuse every `git status` in it.
  fs.writeFileSync(path.join(stage, 'etc/gitconfig'), '[safe]\n\tdirectory = *\n');
  for (const dir of ['tmp', 'workspace', 'proc', 'sys', 'dev', 'root']) fs.mkdirSync(path.join(stage, dir), { recursive: true });
  openToEveryone(stage);
  fs.chmodSync(path.join(stage, 'tmp'), 0o1777);
  fs.chmodSync(path.join(stage, 'workspace'), 0o777);
  const tools = toolVersions({
    busybox,
    node: process.version,
    npm: npm?.version ?? null,
    git: git?.version ?? null,
    python: python ? pythonVersionOf() : null,
  });
  return { python, tools, hostTrees, notes };
}

/**
 * A folder of this machine that goes into the image at the same path, read straight into the archive
 * (never copied first: npm alone is two thousand files), without the entries named in `exclude`.
 */
export interface HostTree {
  path: string;
  exclude: string[];
}

/**
 * npm as the host's Node install has it (prefix/lib/node_modules/npm beside prefix/bin/node, or
 * wherever the `npm` on PATH resolves), at the same path in the image, with `npm` and `npx` linked
 * to its CLIs in /usr/local/bin. Returns its version and the tree, or null.
 */
function hostNpm(stage: string, nodeBinary: string): { version: string; tree: HostTree } | null {
  const candidates = [path.resolve(path.dirname(nodeBinary), '../lib/node_modules/npm')];
  const onPath = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) {
    try {
      candidates.push(path.resolve(path.dirname(fs.realpathSync(onPath)), '..'));
    } catch {
      // A dangling npm link: the first candidate may still hold npm.
    }
  }
  const found = candidates.find((dir) => fs.existsSync(path.join(dir, 'bin/npm-cli.js')) && fs.existsSync(path.join(dir, 'package.json')));
  if (!found) return null;
  const npmDir = fs.realpathSync(found);
  for (const [name, cli] of [
    ['npm', 'npm-cli.js'],
    ['npx', 'npx-cli.js'],
  ] as const)
    fs.symlinkSync(path.join(npmDir, 'bin', cli), path.join(stage, 'usr/local/bin', name));
  const version = (JSON.parse(fs.readFileSync(path.join(npmDir, 'package.json'), 'utf8')) as { version: string }).version;
  // The docs, man pages and changelog are a third of npm and nothing a command needs.
  return { version, tree: { path: npmDir, exclude: ['docs', 'man', 'CHANGELOG.md'].map((name) => path.join(npmDir, name)) } };
}

/**
 * git from this machine: the binary and its libraries, its exec path (the helpers that are scripts,
 * git-sh-setup, submodule, bisect…, and the links to its builtins) and its templates. The helpers that
 * are programs of their own (http remotes, daemon, imap, shell) are left out: they reach the network,
 * which a sandboxed command has not, and would bring libcurl and its TLS stack with them.
 */
function hostGit(stage: string): { version: string; trees: HostTree[] } | null {
  const gitBinary = '/usr/bin/git';
  if (!fs.existsSync(gitBinary)) return null;
  copyInto(stage, gitBinary);
  for (const lib of sharedLibraries(gitBinary)) if (!fs.existsSync(path.join(stage, lib))) copyInto(stage, lib);
  const trees: HostTree[] = [];
  const execPath = spawnSync(gitBinary, ['--exec-path'], { encoding: 'utf8' }).stdout.trim() || '/usr/lib/git-core';
  if (fs.existsSync(execPath)) {
    const exclude: string[] = [];
    for (const entry of fs.readdirSync(execPath, { withFileTypes: true })) {
      const from = path.join(execPath, entry.name);
      if (entry.isFile() && isElf(from) && !['git', 'git-sh-i18n--envsubst'].includes(entry.name)) exclude.push(from);
    }
    trees.push({ path: execPath, exclude });
  }
  const templates = '/usr/share/git-core/templates';
  if (fs.existsSync(templates)) trees.push({ path: templates, exclude: [] });
  const version =
    spawnSync(gitBinary, ['--version'], { encoding: 'utf8' })
      .stdout.trim()
      .replace(/^git version /, '') || 'unknown';
  return { version, trees };
}

function isElf(file: string): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(4);
    fs.readSync(fd, head, 0, 4, 0);
    return head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  } finally {
    fs.closeSync(fd);
  }
}

function pythonVersionOf(): string | null {
  const version = spawnSync('python3', ['-c', 'import platform; print(platform.python_version())'], { encoding: 'utf8' }).stdout.trim();
  return version || null;
}

/** What the image holds, as one label value: `node 20.20.2, npm 11.19.1, …` (what `sandbox status` lists). */
function toolVersions(found: { busybox: string; node: string; npm: string | null; git: string | null; python: string | null }): string {
  const busyboxVersion = spawnSync(found.busybox, [], { encoding: 'utf8' }).stdout.match(/BusyBox v([\w.]+)/)?.[1] ?? 'unknown';
  return [
    `sh (busybox ${busyboxVersion}, with its tools)`,
    `node ${found.node.replace(/^v/, '')}`,
    ...(found.npm ? [`npm ${found.npm}`, `npx ${found.npm}`] : []),
    ...(found.git ? [`git ${found.git}`] : []),
    ...(found.python ? [`python3 ${found.python}`] : []),
  ].join(', ');
}

/**
 * The image's root filesystem as one tar stream: the stage, then each host tree at its own path.
 * Everything is made readable (and searchable, where runnable) by all, owned by root, as the stage's
 * own files are (openToEveryone): the sandbox's user is no user of this machine.
 */
function tarRootfs(stage: string, hostTrees: readonly HostTree[]): NodeJS.ReadableStream & { child: ReturnType<typeof spawn> } {
  const args = ['--numeric-owner', '--owner=0', '--group=0', '--mode=a+rX', '-cf', '-', '-C', stage, '.'];
  for (const tree of hostTrees) {
    // Anchored excludes, by the member name tar gives (the path without its leading slash).
    for (const excluded of tree.exclude) args.push(`--exclude=${excluded.replace(/^\//, '')}`);
    args.push('-C', '/', tree.path.replace(/^\//, ''));
  }
  const child = spawn('tar', ['--anchored', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  return Object.assign(child.stdout, { child });
}

async function followProgress(client: DockerClient, stream: NodeJS.ReadableStream): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    client.docker.modem.followProgress(stream, (error: Error | null, output: { error?: string }[]) => {
      const failed = error ?? output.find((event) => event.error);
      if (failed) reject(failed instanceof Error ? failed : new Error(String(failed.error)));
      else resolve();
    });
  });
}

/**
 * Builds the sandbox image unless its tag already exists. The offline path (host root filesystem +
 * `docker import`) works everywhere this app runs; `prefer: 'dockerfile'` uses build/sandbox/Dockerfile
 * for people whose engine can pull base images.
 */
export async function buildSandboxImage(
  client: DockerClient,
  options: { force?: boolean; prefer?: 'offline' | 'dockerfile'; tag?: string } = {},
): Promise<BuildResult> {
  const tag = options.tag ?? sandboxImageTag();
  const started = performance.now();
  const existing = await imageInfo(client, tag);
  if (existing.present && !options.force) {
    return { ...existing, path: 'cached', seconds: 0, notes: [`${tag} already exists; nothing to build (use --force to rebuild).`] };
  }
  const built = await buildAnew(client, tag, started, options.prefer);
  await removeOlderReplacedImages(client, existing.present ? existing.digest : undefined);
  return built;
}

/**
 * Sandbox images that earlier rebuilds took the tag from (untagged, nothing names them again), removed:
 * every forced rebuild (each CI run does one) left one more of about 175 MB on the engine. The one this
 * rebuild just replaced stays: a run that resolved the tag a moment ago creates its container from that
 * image by id. So does any image still in use (a container, a project image built FROM it): the engine
 * refuses to remove those.
 */
async function removeOlderReplacedImages(client: DockerClient, justReplaced: string | undefined): Promise<void> {
  const untagged = await client.docker.listImages({ filters: { dangling: ['true'], label: [IMAGE_LABEL] } }).catch(() => []);
  for (const image of untagged) {
    if (image.Id === justReplaced) continue;
    await client.docker
      .getImage(image.Id)
      .remove()
      .catch(() => undefined);
  }
}

async function buildAnew(
  client: DockerClient,
  tag: string,
  started: number,
  prefer: 'offline' | 'dockerfile' | undefined,
): Promise<BuildResult> {
  if (prefer === 'dockerfile') return buildFromDockerfile(client, tag, started);
  try {
    return await buildOffline(client, tag, started);
  } catch (offlineError) {
    // Only a machine that cannot supply the pieces falls back; an engine failure is reported as it is.
    if (!(offlineError instanceof ExecutorError) || offlineError.code !== 'SANDBOX_IMAGE_MISSING') throw offlineError;
    try {
      const built = await buildFromDockerfile(client, tag, started);
      return { ...built, notes: [`Offline path not possible: ${offlineError.message}`, ...built.notes] };
    } catch (dockerfileError) {
      throw new ExecutorError(
        'SANDBOX_FAILED',
        `Neither way to build ${tag} worked. Offline: ${offlineError.message} Dockerfile: ${(dockerfileError as Error).message}`,
        { tag },
      );
    }
  }
}

async function buildOffline(client: DockerClient, tag: string, started: number): Promise<BuildResult> {
  const stage = makeTempArea('sandbox-rootfs');
  try {
    const { python, tools, hostTrees, notes } = assembleHostRootfs(stage);
    const tar = tarRootfs(stage, hostTrees);
    const tarErrors: Buffer[] = [];
    tar.child.stderr?.on('data', (chunk: Buffer) => tarErrors.push(chunk));
    const changes = [
      `ENV PATH=/usr/local/bin:/usr/bin:/bin`,
      'ENV HOME=/tmp',
      'WORKDIR /workspace',
      `USER ${SANDBOX_UID}:${SANDBOX_GID}`,
      `LABEL ${IMAGE_LABEL}=offline-host-rootfs`,
      `LABEL ${PYTHON_LABEL}=${python ? 'yes' : 'no'}`,
      `LABEL ${TOOLS_LABEL}=${JSON.stringify(tools)}`,
      // npm would otherwise look for a newer npm on every run: there is no network to ask, and no answer to act on.
      'ENV NPM_CONFIG_UPDATE_NOTIFIER=false',
      'CMD ["/bin/sh"]',
    ];
    const progress = await engineCall(client, () =>
      // The whole reference as `repo`: Docker reads a tag in it, and Podman (4.3) ignores a separate `tag`, naming the image `:latest`.
      client.docker.importImage(tar, { repo: tag, changes }),
    );
    await followProgress(client, progress);
    const exitCode = await new Promise<number | null>((resolve) =>
      tar.child.exitCode !== null ? resolve(tar.child.exitCode) : tar.child.on('close', resolve),
    );
    if (exitCode !== 0)
      throw new ExecutorError('SANDBOX_FAILED', `tar could not pack the image: ${Buffer.concat(tarErrors).toString('utf8')}`, {});
    const info = await imageInfo(client, tag);
    if (!info.present) throw new ExecutorError('SANDBOX_FAILED', `docker import finished but ${tag} is not there.`, { tag });
    return { ...info, path: 'offline-host-rootfs', seconds: (performance.now() - started) / 1000, notes };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

async function buildFromDockerfile(client: DockerClient, tag: string, started: number): Promise<BuildResult> {
  const context = fs.realpathSync(DOCKERFILE_DIR);
  const stream = await engineCall(client, () =>
    client.docker.buildImage(
      { context, src: ['Dockerfile'] },
      {
        t: tag,
        labels: {
          [IMAGE_LABEL]: 'dockerfile',
          [PYTHON_LABEL]: 'yes',
          [TOOLS_LABEL]: 'sh (dash, coreutils), node 20, npm, npx, git, python3',
        },
      },
    ),
  );
  await followProgress(client, stream);
  const info = await imageInfo(client, tag);
  return { ...info, path: 'dockerfile', python: true, seconds: (performance.now() - started) / 1000, notes: [] };
}
