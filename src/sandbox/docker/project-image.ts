import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { ExecutorError } from '../../domain/errors.js';
import { absoluteForMatching, filesystemIgnoresCase } from '../../policy/path-patterns.js';
import type { Policy } from '../../policy/policy-file.js';
import { secretPathMatcher } from '../../policy/secret-paths.js';
import { readDevcontainer, readProjectFile } from './devcontainer.js';
import { engineCall, type DockerClient } from './docker-client.js';
import { imageInfo, requireImage, SANDBOX_GID, SANDBOX_UID, sandboxImageTag } from './sandbox-image.js';

/** Where a root's sandbox image comes from, in the order they are asked (docs/docker-sandbox.md). */
export type ImageSourceKind = 'policy-image' | 'devcontainer-image' | 'devcontainer-build' | 'policy-dockerfile' | 'default';

export interface ImageSource {
  kind: ImageSourceKind;
  /** The image reference (policy-image, devcontainer-image, default). */
  image?: string;
  /** The build (devcontainer-build, policy-dockerfile): absolute paths inside the root. */
  build?: { dockerfile: string; context: string; args: Record<string, string>; target?: string };
  /** The user the configuration names (`remoteUser`/`containerUser`). */
  user?: string;
  /** The file that chose it (devcontainer.json, policy.json), for the person. */
  from: string;
  notes: string[];
}

/** Labels a project image carries: the content digest it was built from, and the root it belongs to. */
const PROJECT_DIGEST_LABEL = 'dev.executor.project-digest';
const PROJECT_ROOT_LABEL = 'dev.executor.project-root';
const PROJECT_REPO = 'executor-project';

/** The policy's setting for a root: a value per root path, or one for every root. */
function perRoot<T>(setting: T | Record<string, T> | undefined, root: string, isValue: (value: unknown) => value is T): T | undefined {
  if (setting === undefined) return undefined;
  if (isValue(setting)) return setting;
  const table = setting as Record<string, T>;
  for (const [key, value] of Object.entries(table)) {
    let real = key;
    try {
      real = fs.realpathSync.native(key);
    } catch {
      // A root that does not exist matches nothing.
    }
    if (real === root || key === root) return value;
  }
  return undefined;
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** A path the project names, kept inside its root: a build context of `../..` would send the person's home to the engine. */
function insideRoot(root: string, candidate: string, what: string, from: string): string {
  let real: string;
  try {
    real = fs.realpathSync.native(candidate);
  } catch {
    throw new ExecutorError('SANDBOX_FAILED', `${from}: the ${what} ${candidate} does not exist.`, { path: candidate });
  }
  if (real !== root && !real.startsWith(root + path.sep))
    throw new ExecutorError('SANDBOX_FAILED', `${from}: the ${what} ${candidate} lies outside the workspace root ${root}; it is refused.`, {
      path: candidate,
      root,
    });
  return real;
}

/**
 * The image a root's commands run in: the policy's `sandbox.image` for the root, else the project's
 * dev container (`image`, or `build.dockerfile` with its context and args), else a Dockerfile the
 * policy names for the root (`sandbox.dockerfile`), else Executor's default image.
 */
export function imageSourceFor(root: string, policy: Policy): ImageSource {
  const settings = policy.sandbox;
  const image = perRoot(settings.image, root, isString);
  if (image) return { kind: 'policy-image', image, from: 'policy.json sandbox.image', notes: [] };
  const devcontainer = readDevcontainer(root);
  const notes = devcontainer?.ignored.map((what) => `${devcontainer.file}: ${what} is not used.`) ?? [];
  if (devcontainer?.image)
    return {
      kind: 'devcontainer-image',
      image: devcontainer.image,
      from: devcontainer.file,
      notes,
      ...(devcontainer.user ? { user: devcontainer.user } : {}),
    };
  if (devcontainer?.build) {
    const { dockerfile, context, args, target } = devcontainer.build;
    return {
      kind: 'devcontainer-build',
      build: {
        dockerfile: insideRoot(root, dockerfile, 'Dockerfile', devcontainer.file),
        context: insideRoot(root, context, 'build context', devcontainer.file),
        args,
        ...(target ? { target } : {}),
      },
      from: devcontainer.file,
      notes,
      ...(devcontainer.user ? { user: devcontainer.user } : {}),
    };
  }
  const named = perRoot(settings.dockerfile, root, isString);
  if (named) {
    const dockerfile = insideRoot(root, path.resolve(root, named), 'Dockerfile', 'policy.json sandbox.dockerfile');
    return {
      kind: 'policy-dockerfile',
      build: { dockerfile, context: path.dirname(dockerfile), args: {} },
      from: 'policy.json sandbox.dockerfile',
      notes,
    };
  }
  return { kind: 'default', image: sandboxImageTag(), from: 'Executor', notes };
}

/**
 * The escape character the builder uses: a `# escape=` parser directive counts only among the lines at
 * the very top that are all directives (a comment, a blank line or an instruction before it makes it a
 * comment), as Docker's parser reads it.
 */
function escapeOf(text: string): '\\' | '`' {
  let escape: '\\' | '`' = '\\';
  for (const line of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    const directive = line.match(/^#[ \t]*([a-zA-Z][a-zA-Z0-9]*)[ \t]*=[ \t]*(.*?)[ \t]*$/);
    if (!directive) break;
    const name = directive[1]!.toLowerCase();
    if (name === 'escape') escape = directive[2] === '`' ? '`' : '\\';
    else if (name !== 'syntax' && name !== 'check') break;
  }
  return escape;
}

/** A Dockerfile's instructions, one per logical line (continuations joined, comments and blank lines out). */
function dockerfileInstructions(text: string, escape: '\\' | '`' = escapeOf(text)): { keyword: string; rest: string }[] {
  const instructions: { keyword: string; rest: string }[] = [];
  let pending = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimEnd();
    if (pending === '' && /^\s*(#|$)/.test(line)) continue;
    // Comment lines inside a continued instruction are dropped, as the builder drops them.
    if (pending !== '' && /^\s*#/.test(line)) continue;
    if (line.endsWith(escape)) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const whole = (pending + line).trim();
    pending = '';
    if (!whole) continue;
    const match = whole.match(/^(\S+)\s*(.*)$/s)!;
    instructions.push({ keyword: match[1]!.toUpperCase(), rest: match[2]! });
  }
  if (pending.trim()) {
    const match = pending.trim().match(/^(\S+)\s*(.*)$/s)!;
    instructions.push({ keyword: match[1]!.toUpperCase(), rest: match[2]! });
  }
  return instructions;
}

/** The instructions of a Dockerfile that run code while it builds: `RUN`, and `ONBUILD RUN` for images built on it. */
export function codeRunningInstructions(text: string): string[] {
  const runs = (escape: '\\' | '`') =>
    dockerfileInstructions(text, escape)
      .filter(({ keyword, rest }) => keyword === 'RUN' || (keyword === 'ONBUILD' && /^RUN\b/i.test(rest)))
      .map(({ keyword, rest }) => `${keyword} ${rest}`);
  const escape = escapeOf(text);
  const found = runs(escape);
  // Read with the other escape character too: where this reading and the builder's could differ (a
  // directive's place, builders' versions), a RUN that either finds is code, and asks for consent.
  return found.length > 0 ? found : runs(escape === '\\' ? '`' : '\\');
}

/**
 * The images a Dockerfile builds FROM, with `ARG`s before the first FROM and the build's args
 * substituted (`FROM ${BASE}`). A name of an earlier stage (`FROM build AS run`, then `FROM build`) is no image.
 */
export function baseImagesOf(text: string, args: Record<string, string>): string[] {
  const values: Record<string, string> = {};
  const stages = new Set<string>();
  const images: string[] = [];
  for (const { keyword, rest } of dockerfileInstructions(text)) {
    if (keyword === 'ARG' && images.length === 0) {
      const [name, ...value] = rest.trim().split('=');
      const key = name!.trim();
      values[key] = args[key] ?? (value.length ? value.join('=').replace(/^["']|["']$/g, '') : '');
    } else if (keyword === 'FROM') {
      const words = rest
        .trim()
        .split(/\s+/)
        .filter((word) => !word.startsWith('--'));
      const image = words[0]!.replace(/\$\{?(\w+)\}?/g, (_whole, name: string) => values[name] ?? args[name] ?? '');
      if (words[1]?.toUpperCase() === 'AS' && words[2]) stages.add(words[2].toLowerCase());
      if (!stages.has(image.toLowerCase()) && image !== 'scratch') images.push(image);
    }
  }
  return images;
}

/**
 * The files of a build context the engine would receive: every file but those .dockerignore leaves out
 * (the Dockerfile always), and never a secret-looking one. A `COPY . /src` would otherwise bake `.env`,
 * private keys and `.git/config` into an image any later command (and a dry run, with no consent)
 * reads, and send them to the engine, wherever it runs: the same rule as the scratch copy's.
 */
function contextFiles(
  root: string,
  context: string,
  dockerfile: string,
  maxBytes: number,
  secretGlobs: readonly string[],
): { files: string[]; bytes: number; secrets: string[] } {
  const secretMatcher = secretPathMatcher(secretGlobs, { caseInsensitive: filesystemIgnoresCase(root) });
  const secrets: string[] = [];
  const isSecret = (full: string): boolean =>
    secretMatcher(path.relative(root, full).split(path.sep).join('/')) || secretMatcher(absoluteForMatching(full));
  const ignoreFile = path.join(context, '.dockerignore');
  const patterns = fs.existsSync(ignoreFile)
    ? readProjectFile(root, ignoreFile, path.relative(root, ignoreFile))
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line && !line.startsWith('#'))
    : [];
  const include = patterns.filter((pattern) => pattern.startsWith('!')).map((pattern) => pattern.slice(1).replace(/^\/+/, ''));
  const exclude = patterns.filter((pattern) => !pattern.startsWith('!')).map((pattern) => pattern.replace(/^\/+/, ''));
  const excluded = exclude.length
    ? picomatch(
        exclude.flatMap((pattern) => [pattern, `${pattern}/**`]),
        { dot: true },
      )
    : () => false;
  const included = include.length
    ? picomatch(
        include.flatMap((pattern) => [pattern, `${pattern}/**`]),
        { dot: true },
      )
    : () => false;
  const dockerfileRelative = path.relative(context, dockerfile).split(path.sep).join('/');
  const files: string[] = [];
  let bytes = 0;
  const walk = (dir: string, relative: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const entryRelative = relative ? `${relative}/${entry.name}` : entry.name;
      const skip = excluded(entryRelative) && !included(entryRelative) && entryRelative !== dockerfileRelative;
      if (!skip && isSecret(path.join(dir, entry.name))) {
        secrets.push(entryRelative);
        continue;
      }
      if (entry.isDirectory()) {
        // A folder left out whole is not walked, unless an exception may bring a file of it back.
        if (skip && include.length === 0) continue;
        walk(path.join(dir, entry.name), entryRelative);
      } else if ((entry.isFile() || entry.isSymbolicLink()) && !skip) {
        files.push(entryRelative);
        bytes += fs.lstatSync(path.join(dir, entry.name)).size;
        if (bytes > maxBytes)
          throw new ExecutorError(
            'SANDBOX_FAILED',
            `The build context ${context} holds more than ${Math.round(maxBytes / 1e6)} MB; leave large folders out with a .dockerignore.`,
            { context },
          );
      }
    }
  };
  walk(context, '');
  return { files, bytes, secrets };
}

/**
 * The content digest a build is cached by: the Dockerfile's path in its context, its target and
 * args, and every file of the context (its path, its mode's run bits, its bytes or link). A change to
 * any of them is a new digest, so a new image; the same content on another day is the same image.
 */
function buildDigest(build: NonNullable<ImageSource['build']>, files: readonly string[], bases: readonly string[]): string {
  const hash = createHash('sha256');
  const line = (text: string) => hash.update(`${text}\n`);
  // The base images by their ids: a rebuilt local base (the default image after an update) is a new build.
  for (const base of bases) line(`base ${base}`);
  line(`dockerfile ${path.relative(build.context, build.dockerfile)}`);
  line(`target ${build.target ?? ''}`);
  for (const name of Object.keys(build.args).sort()) line(`arg ${JSON.stringify(name)}=${JSON.stringify(build.args[name])}`);
  for (const relative of files) {
    const full = path.join(build.context, ...relative.split('/'));
    const stat = fs.lstatSync(full);
    const content = stat.isSymbolicLink()
      ? `link:${fs.readlinkSync(full)}`
      : createHash('sha256').update(fs.readFileSync(full)).digest('hex');
    line(`file ${JSON.stringify(relative)} ${stat.mode & 0o111 ? 'x' : '-'} ${content}`);
  }
  return hash.digest('hex');
}

/** A line of a build's progress, as the engine reports it (`Step 2/4 : RUN …`, the step's output). */
export type BuildProgress = (line: string) => void;

export interface ProjectImage {
  /** The image reference commands run in (a project build's tag is its content digest). */
  tag: string;
  /** The engine's image id: what each step's executorEnv records. */
  digest: string;
  source: ImageSource;
  /** The user commands run as, `uid:gid` (never 0), and where that came from. */
  user: { uid: number; gid: number; name: string | null };
  /** Whether this call built it (false: it was there already, by its content digest). */
  built: boolean;
  /** The build's own output, as it came (empty when nothing was built). */
  buildLog: string[];
  notes: string[];
}

export interface EnsureImageOptions {
  /**
   * The person consented to a build that runs the project's code (a Dockerfile `RUN`): their
   * approval of the step after a dry run that said so, or `executor sandbox image build --root`.
   * Without it, such a build is not started and the step says what the build would run.
   */
  codeBuildConsented?: boolean;
  /**
   * The content digest of the one build the person approved (named in the step's preview error they
   * read at the decision, see consentedBuildDigestOf): that build runs, and no other. A build whose
   * content has changed since is refused with the new build shown, for a fresh decision.
   */
  consentedBuildDigest?: string;
  onProgress?: BuildProgress;
}

/** How a refused build's words begin: the build's content digest first, where a project's text cannot come before it. */
const BUILD_CONSENT_OPENING = "This project's sandbox image (build sha256:";
/** The line a refusal at execute starts with when the approved build is no longer the one that would run. */
const BUILD_CHANGED_LINE =
  'The Dockerfile changed since you approved its build; nothing was built or run. The build that would run now is below: approve the step again to consent to it, or reject it.';

/**
 * The build a step's preview error asked consent for, read only at the very start of the words (a
 * Dockerfile's RUN, shown further on, could carry text that looks like a digest). Undefined: the
 * person was shown no build, so their approval consents to none.
 */
export function consentedBuildDigestOf(previewError: string | null | undefined): string | undefined {
  if (!previewError) return undefined;
  const text = previewError.startsWith(`${BUILD_CHANGED_LINE}\n`) ? previewError.slice(BUILD_CHANGED_LINE.length + 1) : previewError;
  if (!text.startsWith(BUILD_CONSENT_OPENING)) return undefined;
  return text.slice(BUILD_CONSENT_OPENING.length).match(/^([0-9a-f]{64})\)/)?.[1];
}

function buildTag(digest: string): string {
  return `${PROJECT_REPO}:${digest.slice(0, 24)}`;
}

/** The last lines of a build's output, for an error the person reads at the decision. */
function tailOf(lines: readonly string[], count = 30): string {
  return lines.slice(-count).join('\n').trim();
}

/**
 * Builds the root's image through the engine (`docker build`, no registry needed where the base image
 * is local), unless an image of the same content digest is there already. The build runs without
 * network: a project image is built from what the machine and the context hold.
 */
async function buildProjectImage(
  client: DockerClient,
  root: string,
  source: ImageSource,
  policy: Policy,
  options: EnsureImageOptions,
): Promise<{ tag: string; built: boolean; buildLog: string[] }> {
  const build = source.build!;
  const dockerfileRelative = path.relative(build.context, build.dockerfile).split(path.sep).join('/');
  if (dockerfileRelative.startsWith('..'))
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `${source.from}: the Dockerfile ${build.dockerfile} lies outside its build context ${build.context}; move it into the context.`,
      { dockerfile: build.dockerfile },
    );
  const { files, secrets } = contextFiles(
    root,
    build.context,
    build.dockerfile,
    policy.sandbox.maxCopyMb * 1024 * 1024,
    policy.secretGlobs,
  );
  const baseInfos = await Promise.all(
    baseImagesOf(fs.readFileSync(build.dockerfile, 'utf8'), build.args).map(async (base) => {
      const info = await imageInfo(client, base).catch(() => ({ present: false, digest: undefined, onBuild: undefined }));
      return { base, digest: info.digest, onBuild: info.onBuild ?? [] };
    }),
  );
  const bases = baseInfos.map(({ base, digest }) => `${base} ${digest ?? 'not-local'}`);
  const digest = buildDigest(build, files, bases);
  const tag = buildTag(digest);
  const existing = await imageInfo(client, tag);
  if (existing.present) return { tag, built: false, buildLog: [] };
  // Code a build runs comes from the base images too: their ONBUILD RUN triggers run first, and a base
  // that is not on the engine is pulled by the build, bringing triggers nobody has seen.
  const runs = [
    ...codeRunningInstructions(fs.readFileSync(build.dockerfile, 'utf8')),
    ...baseInfos.flatMap(({ base, digest: baseDigest, onBuild }) =>
      baseDigest === undefined
        ? [`FROM ${base} (not on this engine: the build would pull it, and run whatever ONBUILD RUN it carries)`]
        : onBuild
            .filter((trigger) => /^\s*RUN\b/i.test(trigger))
            .map((trigger) => `ONBUILD ${trigger.trim()} (from the base image ${base})`),
    ),
  ];
  const consented = options.codeBuildConsented === true || options.consentedBuildDigest === digest;
  if (runs.length > 0 && !consented) {
    const shown = runs.slice(0, 5).map((run) => (run.length > 200 ? `${run.slice(0, 200)}…` : run));
    // Approved for another build (the Dockerfile, a file of its context or a base changed since): said first.
    const changed = options.consentedBuildDigest !== undefined;
    throw new ExecutorError(
      'SANDBOX_IMAGE_MISSING',
      `${changed ? `${BUILD_CHANGED_LINE}\n` : ''}${BUILD_CONSENT_OPENING}${digest}) is built from ${path.relative(root, build.dockerfile)} (${source.from}), and building it runs the project's code: ${shown.join('; ')}${runs.length > 5 ? ` and ${runs.length - 5} more` : ''}. Nothing was built or run. Approve this step to build the image (this build alone, without network: if the Dockerfile or a file it builds from changes first, you are asked again) and then run the command on a copy; you see what it changed before anything is applied. Or build it yourself: \`executor sandbox image build --root ${root}\`.`,
      {
        tag,
        contentDigest: digest,
        dockerfile: path.relative(root, build.dockerfile),
        runs,
        needsBuildConsent: true,
        ...(changed ? { buildChanged: true, approvedContentDigest: options.consentedBuildDigest } : {}),
      },
    );
  }
  const buildLog: string[] = [];
  const say = (raw: string) => {
    // The engine colours a RUN's stderr; the person reads the words.
    // eslint-disable-next-line no-control-regex
    const line = raw.replace(/\u001b\[[0-9;]*m/g, '');
    buildLog.push(line);
    options.onProgress?.(line);
  };
  say(`Building the project image ${tag} from ${path.relative(root, build.dockerfile)} (${source.from})`);
  if (secrets.length > 0)
    say(
      `Left out of the build context (they look like secrets): ${secrets.slice(0, 10).join(', ')}${secrets.length > 10 ? ` and ${secrets.length - 10} more` : ''}`,
    );
  const context = packContext(build.context, files);
  const stream = await engineCall(client, () =>
    client.docker.buildImage(context, {
      t: tag,
      dockerfile: dockerfileRelative,
      buildargs: build.args,
      ...(build.target ? { target: build.target } : {}),
      networkmode: 'none',
      rm: true,
      forcerm: true,
      labels: { [PROJECT_DIGEST_LABEL]: digest, [PROJECT_ROOT_LABEL]: root },
    }),
  );
  const failure = await new Promise<string | null>((resolve) => {
    client.docker.modem.followProgress(
      stream,
      (error: Error | null) => resolve(error ? error.message : null),
      (event: { stream?: string; status?: string; error?: string; errorDetail?: { message?: string } }) => {
        if (event.error) {
          say(event.errorDetail?.message ?? event.error);
          resolve(event.errorDetail?.message ?? event.error);
          return;
        }
        const text = event.stream ?? event.status;
        if (text) for (const line of text.split('\n')) if (line.trim()) say(line.trimEnd());
      },
    );
  });
  if (failure !== null || !(await imageInfo(client, tag)).present) {
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `The project's sandbox image did not build from ${path.relative(root, build.dockerfile)} (${source.from}): ${failure ?? 'the engine ended without an image'}\n${tailOf(buildLog)}`,
      { phase: 'build', dockerfile: path.relative(root, build.dockerfile), buildLog: tailOf(buildLog, 60) },
    );
  }
  say(`Built ${tag}`);
  return { tag, built: true, buildLog };
}

/**
 * The build context as a tar stream of exactly the files hashed, with their own modes. Packed by tar,
 * not by dockerode's packer, which cuts every mode by this process's umask: under Executor's 077 a
 * COPY'd script would reach the image readable by root alone.
 */
function packContext(context: string, files: readonly string[]): NodeJS.ReadableStream {
  const tar = spawn(
    'tar',
    ['-C', context, '--numeric-owner', '--owner=0', '--group=0', '--no-recursion', '--null', '-T', '-', '-cf', '-'],
    {
      stdio: ['pipe', 'pipe', 'ignore'],
    },
  );
  // Folders first, so each keeps its own mode rather than one tar makes up.
  const folders = new Set<string>();
  for (const file of files) {
    const parts = file.split('/');
    for (let depth = 1; depth < parts.length; depth++) folders.add(parts.slice(0, depth).join('/'));
  }
  tar.stdin.end([...folders, ...files].map((entry) => `${entry}\0`).join(''));
  return tar.stdout;
}

/** Reads one file out of an image without starting it: a created container is never run. */
async function fileOfImage(client: DockerClient, image: string, file: string): Promise<string | null> {
  const container = await engineCall(client, () =>
    client.docker.createContainer({ Image: image, Cmd: ['/nonexistent'], Entrypoint: [], NetworkDisabled: true, Labels: {} }),
  );
  try {
    const archive = (await container.getArchive({ path: file })) as NodeJS.ReadableStream;
    const tar = spawn('tar', ['-xOf', '-'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    tar.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    archive.pipe(tar.stdin);
    const code = await new Promise<number | null>((resolve) => tar.on('close', resolve));
    return code === 0 ? Buffer.concat(chunks).toString('utf8') : null;
  } catch {
    return null;
  } finally {
    await container.remove({ force: true, v: true }).catch(() => undefined);
  }
}

/**
 * The non-root user a root's commands run as: the one its configuration names (`remoteUser`, else
 * `containerUser`), else the image's own `USER`, else Executor's fixed uid. A name is looked up in
 * the image's /etc/passwd; a user that is root, or that the image does not know, refuses the image
 * with words that say which.
 */
async function runUserFor(
  client: DockerClient,
  image: string,
  configured: string | undefined,
  imageUser: string | undefined,
  from: string,
): Promise<ProjectImage['user']> {
  const named = configured ?? (imageUser && imageUser !== '' ? imageUser : undefined);
  if (!named) return { uid: SANDBOX_UID, gid: SANDBOX_GID, name: null };
  const said = configured ? `${from} names the user "${named}"` : `the image's USER is "${named}"`;
  const [userPart, groupPart] = named.split(':') as [string, string | undefined];
  let uid: number | undefined = /^\d+$/.test(userPart) ? Number(userPart) : undefined;
  let gid: number | undefined = groupPart !== undefined && /^\d+$/.test(groupPart) ? Number(groupPart) : undefined;
  if (uid === undefined || (gid === undefined && groupPart === undefined)) {
    const passwd = (await fileOfImage(client, image, '/etc/passwd')) ?? '';
    const entry = passwd
      .split('\n')
      .map((line) => line.split(':'))
      .find((fields) => (uid === undefined ? fields[0] === userPart : Number(fields[2]) === uid));
    if (entry) {
      uid = Number(entry[2]);
      gid ??= Number(entry[3]);
    } else if (uid === undefined) {
      throw new ExecutorError(
        'SANDBOX_FAILED',
        `The sandbox image ${image} cannot be used: ${said}, and the image has no such user in /etc/passwd. Name a user the image has, or a uid.`,
        { image, user: named, refused: 'unknown-user' },
      );
    }
  }
  if (uid === 0 || userPart === 'root')
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `The sandbox image ${image} cannot be used as it is: ${said}, which is root, and Executor never runs a command as root. Name a non-root user ("remoteUser" in devcontainer.json), or leave it out to run as uid ${SANDBOX_UID}.`,
      { image, user: named, refused: 'root-user' },
    );
  // Group root reads and writes what root's group may (a root-owned file of mode 0660, a socket):
  // no capability needed, so it is refused as root is.
  if (gid === 0 || groupPart === 'root')
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `The sandbox image ${image} cannot be used as it is: ${said}, whose group is root (gid 0), and Executor never runs a command in root's group. Name a non-root group, or leave the group out.`,
      { image, user: named, refused: 'root-group' },
    );
  // A group named by name alone is looked up no further: the user's own group stands in for it.
  return { uid: uid!, gid: gid ?? uid!, name: named };
}

/** Images each root's settings led to, by root: what the audit log names as a step's sandbox. */
const lastImageByRoot = new Map<string, string>();

/** The image id a root's commands last ran in, in this process (undefined: none yet). */
export function lastImageDigestForRoot(root: string): string | undefined {
  return lastImageByRoot.get(root);
}

/**
 * The image, user and digest a root's commands run in, building the project's image when its
 * content changed. Hardening does not depend on the image (container-spec.ts applies it to every
 * one); what an image could defeat (running as root) is refused here.
 */
export async function ensureProjectImage(
  client: DockerClient,
  root: string,
  policy: Policy,
  options: EnsureImageOptions = {},
): Promise<ProjectImage> {
  const source = imageSourceFor(root, policy);
  if (source.kind === 'default') {
    const image = await requireImage(client, source.image);
    lastImageByRoot.set(root, image.digest);
    return {
      tag: image.tag,
      digest: image.digest,
      source,
      user: { uid: SANDBOX_UID, gid: SANDBOX_GID, name: null },
      built: false,
      buildLog: [],
      notes: source.notes,
    };
  }
  let tag: string;
  let built = false;
  let buildLog: string[] = [];
  if (source.build) ({ tag, built, buildLog } = await buildProjectImage(client, root, source, policy, options));
  else {
    tag = source.image!;
    const present = await imageInfo(client, tag);
    if (!present.present)
      throw new ExecutorError(
        'SANDBOX_IMAGE_MISSING',
        `The sandbox image ${tag} (${source.from}) is not on this engine. Pull or build it (\`docker pull ${tag}\`), then run the step again.`,
        { tag, from: source.from },
      );
  }
  const info = await imageInfo(client, tag);
  if (!info.present || !info.digest)
    throw new ExecutorError('SANDBOX_IMAGE_MISSING', `The sandbox image ${tag} is gone from the engine.`, { tag });
  const user = await runUserFor(client, tag, source.user, info.user, source.from);
  lastImageByRoot.set(root, info.digest);
  return { tag, digest: info.digest, source, user, built, buildLog, notes: source.notes };
}
