import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';

/**
 * The parts of a dev container configuration (containers.dev: the file VS Code, GitHub Codespaces
 * and the devcontainer CLI share) that say which image a project's commands run in, and as whom.
 */
export interface DevcontainerImage {
  /** The file it came from. */
  file: string;
  /** An image by reference (`image`). */
  image?: string;
  /** A build (`build.dockerfile`, or the older top-level `dockerFile`), with paths resolved from the file's folder. */
  build?: { dockerfile: string; context: string; args: Record<string, string>; target?: string };
  /** The user the tools run as (`remoteUser`, else `containerUser`), when the file names one. */
  user?: string;
  /** What the file asks for that Executor does not do (compose, features), in words for `sandbox status`. */
  ignored: string[];
}

/** Where a project keeps its dev container configuration, in the order the spec looks. */
const DEVCONTAINER_FILES = ['.devcontainer/devcontainer.json', '.devcontainer.json'];

/**
 * JSON with comments and trailing commas (JSONC, what devcontainer.json is) as plain JSON text.
 * Strings are copied as they are, escapes included, so a `//` or `/*` inside a string stays; an
 * unterminated block comment or string is left for JSON.parse to refuse.
 */
export function jsoncToJson(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const char = text[i]!;
    if (char === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      out += text.slice(i, end + 1);
      i = end + 1;
    } else if (char === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (char === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      // Unterminated: keep it, so the parse fails instead of silently dropping the rest of the file.
      if (end === -1) {
        out += text.slice(i);
        break;
      }
      // A comment separates tokens as a blank does.
      out += ' ';
      i = end + 2;
    } else if (char === ',') {
      let next = i + 1;
      // The next token after blanks and comments: a closing bracket makes this comma trailing.
      for (;;) {
        while (next < text.length && /\s/.test(text[next]!)) next++;
        if (text.startsWith('//', next)) {
          while (next < text.length && text[next] !== '\n') next++;
        } else if (text.startsWith('/*', next)) {
          const end = text.indexOf('*/', next + 2);
          if (end === -1) break;
          next = end + 2;
        } else break;
      }
      if (text[next] !== '}' && text[next] !== ']') out += ',';
      i++;
    } else {
      out += char;
      i++;
    }
  }
  return out;
}

/** An image reference as the engine reads one (the policy's `sandbox.image` has the same grammar). */
const IMAGE_REFERENCE =
  /^(?:sha256:[0-9a-f]{64}|[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?)$/;

/** Larger than any configuration a project writes by hand. */
const MAX_PROJECT_FILE_BYTES = 1024 * 1024;

/**
 * A configuration file the project holds (devcontainer.json, .dockerignore), read only where it is a
 * regular file of a sane size inside the root by real path. A cloned repository may hold it as a
 * link: to `~/.aws/credentials` (whose first bytes a parse error would quote to the agent), or to
 * `/dev/zero` (a read that never ends, in the host's own thread).
 */
export function readProjectFile(root: string, file: string, relative: string): string {
  let real: string;
  let realRoot: string;
  try {
    real = fs.realpathSync.native(file);
    realRoot = fs.realpathSync.native(root);
  } catch (error) {
    throw new ExecutorError('SANDBOX_FAILED', `${relative} cannot be read: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}.`, {
      file: relative,
    });
  }
  if (real !== realRoot && !real.startsWith(realRoot + path.sep))
    throw new ExecutorError('SANDBOX_FAILED', `${relative} is a link that leads out of the workspace root ${realRoot}; it is refused.`, {
      file: relative,
      refused: 'outside-root',
    });
  const stat = fs.statSync(real);
  if (!stat.isFile())
    throw new ExecutorError('SANDBOX_FAILED', `${relative} is not a regular file; it is refused.`, {
      file: relative,
      refused: 'not-a-file',
    });
  if (stat.size > MAX_PROJECT_FILE_BYTES)
    throw new ExecutorError('SANDBOX_FAILED', `${relative} holds ${stat.size} bytes, more than ${MAX_PROJECT_FILE_BYTES}; it is refused.`, {
      file: relative,
      refused: 'too-large',
    });
  return fs.readFileSync(real, 'utf8');
}

function stringField(value: unknown, field: string, file: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0)
    throw new ExecutorError('SANDBOX_FAILED', `${file}: "${field}" must be a non-empty string.`, { file, field });
  return value;
}

/**
 * The project's dev container configuration, or null when it has none. A file that is there but
 * cannot be read as one is a typed error naming the file and what is wrong: a project that asked
 * for its own image never silently gets the default one.
 */
export function readDevcontainer(root: string): DevcontainerImage | null {
  const relative = DEVCONTAINER_FILES.find((candidate) => fs.existsSync(path.join(root, candidate)));
  if (!relative) return null;
  const file = path.join(root, relative);
  const text = readProjectFile(root, file, relative);
  let parsed: unknown;
  try {
    parsed = JSON.parse(jsoncToJson(text));
  } catch (error) {
    throw new ExecutorError('SANDBOX_FAILED', `${relative} is not valid JSON with comments: ${(error as Error).message}`, {
      file: relative,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ExecutorError('SANDBOX_FAILED', `${relative} must hold one JSON object.`, { file: relative });
  const config = parsed as Record<string, unknown>;
  const folder = path.dirname(file);
  const ignored: string[] = [];
  if (config.dockerComposeFile !== undefined) ignored.push('dockerComposeFile (Executor runs one container, not a compose project)');
  if (config.features !== undefined) ignored.push('features (they are installed by the devcontainer CLI, not by a Dockerfile build)');
  const user = stringField(config.remoteUser, 'remoteUser', relative) ?? stringField(config.containerUser, 'containerUser', relative);
  const image = stringField(config.image, 'image', relative);
  // What a project names reaches the person's eyes as a command to run (`docker pull …`): only a reference.
  if (image !== undefined && !IMAGE_REFERENCE.test(image))
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `${relative}: "image" is not an image reference (name[:tag] or name@sha256:…); it is refused.`,
      {
        file: relative,
        field: 'image',
      },
    );
  const build = (config.build ?? {}) as Record<string, unknown>;
  if (typeof build !== 'object' || build === null || Array.isArray(build))
    throw new ExecutorError('SANDBOX_FAILED', `${relative}: "build" must be an object.`, { file: relative });
  const dockerfile = stringField(build.dockerfile, 'build.dockerfile', relative) ?? stringField(config.dockerFile, 'dockerFile', relative);
  const result: DevcontainerImage = { file: relative, ignored, ...(user ? { user } : {}) };
  if (dockerfile) {
    const context = stringField(build.context, 'build.context', relative) ?? stringField(config.context, 'context', relative) ?? '.';
    const args: Record<string, string> = {};
    const rawArgs = build.args ?? {};
    if (typeof rawArgs !== 'object' || rawArgs === null || Array.isArray(rawArgs))
      throw new ExecutorError('SANDBOX_FAILED', `${relative}: "build.args" must be an object of strings.`, { file: relative });
    for (const [name, value] of Object.entries(rawArgs)) {
      if (typeof value !== 'string')
        throw new ExecutorError('SANDBOX_FAILED', `${relative}: build.args.${name} must be a string.`, { file: relative });
      args[name] = value;
    }
    const target = stringField(build.target, 'build.target', relative);
    result.build = {
      dockerfile: path.resolve(folder, dockerfile),
      context: path.resolve(folder, context),
      args,
      ...(target ? { target } : {}),
    };
  } else if (image) result.image = image;
  else if (config.dockerComposeFile === undefined)
    throw new ExecutorError('SANDBOX_FAILED', `${relative} names neither "image" nor "build.dockerfile".`, { file: relative });
  return result;
}
