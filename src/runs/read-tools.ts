import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { guardPath } from '../policy/path-guard.js';
import { absoluteForMatching, filesystemIgnoresCase } from '../policy/path-patterns.js';
import { matchingSecretGlob } from '../policy/secret-paths.js';
import type { Policy } from '../policy/policy-file.js';
import type { RunToolArgs } from './run-tools.js';

/*
 * The read-only tools of a run, answered by the loop itself (no step: nothing changes, risk LOW),
 * inside the run's workspace root only, through the same path check every step's path passes
 * (guardPath: real paths, no way out through a link, never the data directory). A file matching the
 * secret patterns is never read back to the model: the call is DENIED with the pattern.
 */

export const READ_FILE_BYTES = 64 * 1024;
const LIST_ENTRIES = 500;
const SEARCH_FILES_SCANNED = 5_000;
const SEARCH_FILE_BYTES = 1024 * 1024;
const SEARCH_MATCHES = 100;
const SEARCH_LINE_CHARACTERS = 300;
/** Trees a search never walks: they are big and rarely what a task means. */
const SKIPPED_FOLDERS = new Set(['.git', 'node_modules']);

export type ReadOutcome =
  | { outcome: 'READ'; result: string }
  | { outcome: 'DENIED'; result: string; code: string }
  | { outcome: 'FAILED'; result: string; code: string };

export interface ReadToolEnvironment {
  policy: Policy;
  dataDir: string;
  root: string;
  kbSearch(query: string): { entryId: string; title: string; content: string; tags: string[] }[];
}

interface Resolved {
  realPath: string;
  relativePath: string;
  root: string;
}

/** The path checked like a step's, against the run's root alone; a refusal says why. A folder tool may name the root itself. */
function resolve(requested: string, env: ReadToolEnvironment, folder = false): Resolved | ReadOutcome {
  if (folder && path.resolve(env.root, requested) === path.resolve(env.root)) {
    const realRoot = fs.realpathSync.native(env.root);
    return { realPath: realRoot, relativePath: '', root: realRoot };
  }
  const verdict = guardPath(requested, [env.root], env.dataDir);
  if (!verdict.ok) return { outcome: 'DENIED', code: verdict.code, result: verdict.reason };
  return { realPath: verdict.realPath, relativePath: verdict.relativePath, root: verdict.root };
}

function secretGlobOf(resolved: Resolved, env: ReadToolEnvironment): string | undefined {
  const options = { caseInsensitive: filesystemIgnoresCase(resolved.root) };
  // Above the root counts too: with a root inside ~/.aws, "credentials" is still ~/.aws/credentials.
  return (
    matchingSecretGlob(resolved.relativePath, env.policy.secretGlobs, options) ??
    matchingSecretGlob(absoluteForMatching(resolved.realPath), env.policy.secretGlobs, options)
  );
}

function failure(error: unknown, shown: string): ReadOutcome {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return { outcome: 'FAILED', code: 'NOT_FOUND', result: `${shown} does not exist.` };
  if (code === 'EACCES' || code === 'EPERM')
    return { outcome: 'FAILED', code: 'PERMISSION_DENIED', result: `${shown} may not be read (permission denied).` };
  if (error instanceof ExecutorError) return { outcome: 'FAILED', code: error.code, result: error.message };
  return { outcome: 'FAILED', code: 'INTERNAL', result: `${shown} could not be read: ${(error as Error).message}` };
}

const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

export async function readFileTool(args: RunToolArgs<'read_file'>, env: ReadToolEnvironment): Promise<ReadOutcome> {
  const resolved = resolve(args.path, env);
  if ('outcome' in resolved) return resolved;
  const secret = secretGlobOf(resolved, env);
  if (secret)
    return {
      outcome: 'DENIED',
      code: 'SECRET_PATH',
      result: `${resolved.relativePath} matches the secret pattern "${secret}": secret files are never sent to the model.`,
    };
  try {
    // Looked at before it is opened: opening a FIFO or a device could block or have effects of its own.
    const before = await fs.promises.lstat(resolved.realPath);
    if (!before.isFile())
      return {
        outcome: 'FAILED',
        code: 'PATH_INVALID',
        result: `${resolved.relativePath} is not a regular file${before.isDirectory() ? ' (it is a folder: use list_dir)' : ''}.`,
      };
    const handle = await fs.promises.open(resolved.realPath, OPEN_FLAGS);
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) return { outcome: 'FAILED', code: 'PATH_INVALID', result: `${resolved.relativePath} is not a regular file.` };
      const offset = Math.min(args.offset ?? 0, stat.size);
      const buffer = Buffer.alloc(Math.min(READ_FILE_BYTES, stat.size - offset));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      const chunk = buffer.subarray(0, bytesRead);
      if (chunk.includes(0))
        return { outcome: 'READ', result: `${resolved.relativePath} is a binary file of ${stat.size} bytes; it is not shown.` };
      const end = offset + bytesRead;
      const more = end < stat.size ? `\n… (${stat.size - end} more bytes; read on with offset ${end})` : '';
      return { outcome: 'READ', result: chunk.toString('utf8') + more };
    } finally {
      await handle.close();
    }
  } catch (error) {
    return failure(error, resolved.relativePath);
  }
}

export async function listDirTool(args: RunToolArgs<'list_dir'>, env: ReadToolEnvironment): Promise<ReadOutcome> {
  const resolved = resolve(args.path ?? '.', env, true);
  if ('outcome' in resolved) return resolved;
  try {
    const entries = await fs.promises.readdir(resolved.realPath, { withFileTypes: true });
    entries.sort((a, b) => a.name.localeCompare(b.name));
    const lines: string[] = [];
    for (const entry of entries.slice(0, LIST_ENTRIES)) {
      if (entry.isDirectory()) lines.push(`${entry.name}/`);
      else if (entry.isSymbolicLink()) lines.push(`${entry.name} (link)`);
      else {
        const size = await fs.promises.lstat(path.join(resolved.realPath, entry.name)).then(
          (stat) => stat.size,
          () => null,
        );
        lines.push(size === null ? entry.name : `${entry.name} (${size} bytes)`);
      }
    }
    if (entries.length > LIST_ENTRIES) lines.push(`… and ${entries.length - LIST_ENTRIES} more entries`);
    const where = resolved.relativePath === '' ? 'The workspace folder' : resolved.relativePath;
    return { outcome: 'READ', result: lines.length ? lines.join('\n') : `${where} is empty.` };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR')
      return { outcome: 'FAILED', code: 'PATH_INVALID', result: `${resolved.relativePath} is a file, not a folder: use read_file.` };
    return failure(error, resolved.relativePath || '.');
  }
}

/** Plain-text, case-insensitive search under a folder, skipping secret files, links, binaries and big files. */
export async function searchFilesTool(args: RunToolArgs<'search_files'>, env: ReadToolEnvironment): Promise<ReadOutcome> {
  const resolved = resolve(args.path ?? '.', env, true);
  if ('outcome' in resolved) return resolved;
  const needle = args.query.toLowerCase();
  const matches: string[] = [];
  let scanned = 0;
  let skippedSecrets = 0;
  const folders = [resolved.realPath];
  try {
    while (folders.length > 0 && matches.length < SEARCH_MATCHES && scanned < SEARCH_FILES_SCANNED) {
      const folder = folders.shift()!;
      const entries = await fs.promises.readdir(folder, { withFileTypes: true }).catch(() => []);
      entries.sort((a, b) => a.name.localeCompare(b.name));
      for (const entry of entries) {
        const full = path.join(folder, entry.name);
        const relative = path.relative(resolved.root, full);
        if (entry.isDirectory()) {
          if (!SKIPPED_FOLDERS.has(entry.name)) folders.push(full);
          continue;
        }
        if (!entry.isFile()) continue;
        if (secretGlobOf({ realPath: full, relativePath: relative, root: resolved.root }, env)) {
          skippedSecrets++;
          continue;
        }
        if (++scanned > SEARCH_FILES_SCANNED) break;
        const stat = await fs.promises.lstat(full).catch(() => null);
        if (!stat?.isFile() || stat.size > SEARCH_FILE_BYTES) continue;
        const content = await fs.promises.readFile(full).catch(() => null);
        if (!content || content.includes(0)) continue;
        const lines = content.toString('utf8').split('\n');
        for (let index = 0; index < lines.length && matches.length < SEARCH_MATCHES; index++) {
          if (lines[index]!.toLowerCase().includes(needle))
            matches.push(`${relative}:${index + 1}: ${lines[index]!.slice(0, SEARCH_LINE_CHARACTERS)}`);
        }
        if (matches.length >= SEARCH_MATCHES) break;
      }
    }
  } catch (error) {
    return failure(error, resolved.relativePath || '.');
  }
  const notes: string[] = [];
  if (matches.length >= SEARCH_MATCHES) notes.push(`(stopped at ${SEARCH_MATCHES} matches; narrow the query or the folder)`);
  if (scanned > SEARCH_FILES_SCANNED) notes.push(`(stopped after ${SEARCH_FILES_SCANNED} files; narrow the folder)`);
  if (skippedSecrets > 0) notes.push(`(${skippedSecrets} secret-looking file(s) not searched)`);
  const body = matches.length ? matches.join('\n') : `No file contains "${args.query}".`;
  return { outcome: 'READ', result: [body, ...notes].join('\n') };
}

export function kbSearchTool(args: RunToolArgs<'kb_search'>, env: ReadToolEnvironment): ReadOutcome {
  const entries = env.kbSearch(args.query);
  if (entries.length === 0) return { outcome: 'READ', result: `No knowledge-base entry matches "${args.query}".` };
  return {
    outcome: 'READ',
    result: JSON.stringify(
      entries.map((entry) => ({ entryId: entry.entryId, title: entry.title, tags: entry.tags, content: entry.content.slice(0, 4000) })),
    ),
  };
}
