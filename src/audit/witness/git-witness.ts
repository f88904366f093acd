import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SignedNoteError, openNote, type NoteVerifier } from '../format/signed-note.js';
import { parseCheckpointText, type TlogCheckpoint } from '../format/tlog-checkpoint.js';
import { WitnessUnreachable } from './witness-client.js';
import { originHash } from './witness-state.js';
import { standingAgainst, type WitnessedLog } from './witnessed-log.js';

/**
 * A team's git remote as a witness: each checkpoint note is appended to one file on a branch the
 * team protects on its git host (no force-push, no deletion), so the agent's account can add to
 * it but never rewrite it. Driven through the git CLI, with the person's own git credentials.
 */

/** git's stderr is several lines; a report line shows them joined with "; ", not as an escaped newline. */
function oneLine(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean)
    .join('; ');
}

export interface GitWitnessTarget {
  name: string;
  remote: string;
  branch: string;
  /** A local clone kept for this witness (created on first use). */
  cloneDir: string;
  /** Runs between the commit and the push: the seam a test uses to move the remote meanwhile. */
  beforePush?: () => Promise<void>;
}

const GIT_TIMEOUT_MS = 60_000;
/** Tries when a push is refused because the remote moved meanwhile (another copy of this log, or a teammate's log). */
const PUSH_ATTEMPTS = 3;

/** The file on the branch that holds this log's checkpoints, one note after another, a blank line after each. */
export function checkpointFilePath(origin: string): string {
  return `executor-audit/${originHash(origin)}.checkpoints`;
}

interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

function git(cwd: string, args: string[]): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      // No hooks of the clone and no command-running transports (ext::): the remote is data, never a program.
      [
        '-c',
        'user.name=Executor',
        '-c',
        'user.email=executor@localhost',
        '-c',
        'commit.gpgsign=false',
        '-c',
        'core.hooksPath=/dev/null',
        '-c',
        'protocol.ext.allow=never',
        ...args,
      ],
      // No prompt for a password that nobody is there to type: the command fails and says so instead of hanging.
      {
        cwd,
        timeout: GIT_TIMEOUT_MS,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '', SSH_ASKPASS: '', LC_ALL: 'C' },
      },
      (error, stdout, stderr) => {
        if (error && typeof (error as { code?: unknown }).code !== 'number')
          return reject(new WitnessUnreachable(`git ${args[0]}: ${error.message}`));
        resolve({ code: error ? Number((error as { code?: number }).code) : 0, stdout, stderr });
      },
    );
  });
}

async function mustGit(cwd: string, args: string[]): Promise<string> {
  const result = await git(cwd, args);
  if (result.code !== 0) throw new WitnessUnreachable(`git ${args.join(' ')}: ${oneLine(result.stderr) || `exit ${result.code}`}`);
  return result.stdout;
}

async function prepareClone(target: GitWitnessTarget): Promise<void> {
  if (!fs.existsSync(path.join(target.cloneDir, '.git'))) {
    fs.mkdirSync(target.cloneDir, { recursive: true, mode: 0o700 });
    await mustGit(target.cloneDir, ['init', '-q']);
    await mustGit(target.cloneDir, ['remote', 'add', 'origin', target.remote]);
  } else {
    await mustGit(target.cloneDir, ['remote', 'set-url', 'origin', target.remote]);
  }
}

/** Fetches the branch; false when the remote has no such branch yet. */
async function fetchBranch(target: GitWitnessTarget): Promise<boolean> {
  const listed = await mustGit(target.cloneDir, ['ls-remote', '--heads', 'origin', `refs/heads/${target.branch}`]);
  if (listed.trim() === '') return false;
  await mustGit(target.cloneDir, ['fetch', '-q', 'origin', `+refs/heads/${target.branch}:refs/remotes/origin/${target.branch}`]);
  return true;
}

/** Notes in the file's text: each a checkpoint body (no blank lines), a blank line, signature lines, then a blank line. */
export function splitCheckpointNotes(text: string): string[] {
  const notes: string[] = [];
  const lines = text.split('\n');
  let at = 0;
  while (at < lines.length) {
    while (at < lines.length && lines[at] === '') at += 1;
    if (at >= lines.length) break;
    const body: string[] = [];
    while (at < lines.length && lines[at] !== '') body.push(lines[at++]!);
    at += 1;
    const signatures: string[] = [];
    while (at < lines.length && lines[at]!.startsWith('\u2014 ')) signatures.push(lines[at++]!);
    notes.push(`${body.join('\n')}\n\n${signatures.map((line) => `${line}\n`).join('')}`);
  }
  return notes;
}

export interface RemoteCheckpoint {
  checkpoint: TlogCheckpoint;
  note: string;
}

/**
 * The newest checkpoint the remote's branch holds for this log, checked against the log's key.
 * A newest note that does not verify is an error, never skipped: someone wrote to the branch who
 * should not have, and an older note beneath it proves nothing about the present.
 */
async function newestOnRemote(target: GitWitnessTarget, origin: string, verifiers: NoteVerifier[]): Promise<RemoteCheckpoint | undefined> {
  const shown = await git(target.cloneDir, ['show', `refs/remotes/origin/${target.branch}:${checkpointFilePath(origin)}`]);
  if (shown.code !== 0) return undefined;
  const notes = splitCheckpointNotes(shown.stdout);
  const note = notes.at(-1);
  if (!note) return undefined;
  try {
    const opened = openNote(note, verifiers);
    const checkpoint = parseCheckpointText(opened.text);
    if (checkpoint.origin !== origin) throw new SignedNoteError('malformed', `it names the log ${checkpoint.origin}`);
    return { checkpoint, note };
  } catch (error) {
    if (error instanceof SignedNoteError)
      throw new WitnessUnreachable(
        `${target.remote} (${target.branch}): its newest checkpoint note does not verify with this log's key (${error.message})`,
      );
    throw error;
  }
}

/** Fetches and reads the remote's newest checkpoint of this log (for verify). */
export async function readGitWitness(
  target: GitWitnessTarget,
  log: Pick<WitnessedLog, 'origin' | 'verifiers'>,
): Promise<RemoteCheckpoint | undefined> {
  await prepareClone(target);
  if (!(await fetchBranch(target))) return undefined;
  return newestOnRemote(target, log.origin, log.verifiers);
}

export type GitPublishOutcome =
  | { kind: 'published'; size: number }
  | { kind: 'up_to_date'; size: number }
  /** The remote holds a checkpoint this log is not consistent with: nothing was pushed. */
  | { kind: 'diverged'; standing: 'rolled_back' | 'forked'; remote: TlogCheckpoint };

/**
 * Appends the newest checkpoint to the branch and pushes. A push refused because the remote moved
 * is fetched and checked again, never forced; a remote this log is not consistent with is left as it is.
 */
export async function publishToGit(target: GitWitnessTarget, log: WitnessedLog): Promise<GitPublishOutcome | undefined> {
  const newest = log.newestCheckpoint();
  if (!newest) return undefined;
  await prepareClone(target);
  const file = checkpointFilePath(log.origin);
  for (let attempt = 1; ; attempt += 1) {
    const exists = await fetchBranch(target);
    const remote = exists ? await newestOnRemote(target, log.origin, log.verifiers) : undefined;
    if (remote) {
      const standing = standingAgainst(log, remote.checkpoint);
      if (standing !== 'consistent') return { kind: 'diverged', standing, remote: remote.checkpoint };
      if (remote.checkpoint.size >= newest.size) return { kind: 'up_to_date', size: remote.checkpoint.size };
    }
    if (exists) await mustGit(target.cloneDir, ['checkout', '-q', '-f', '-B', target.branch, `refs/remotes/origin/${target.branch}`]);
    else {
      await mustGit(target.cloneDir, ['checkout', '-q', '-f', '--orphan', `executor-new-${process.pid}-${attempt}`]);
      await git(target.cloneDir, ['rm', '-rqf', '--cached', '.']);
    }
    const absolute = path.join(target.cloneDir, file);
    // A new branch starts from nothing: no note left over from an earlier try may ride along.
    if (!exists) fs.rmSync(absolute, { force: true });
    fs.mkdirSync(path.dirname(absolute), { recursive: true });
    fs.appendFileSync(absolute, `${newest.note}\n`);
    await mustGit(target.cloneDir, ['add', '--', file]);
    await mustGit(target.cloneDir, ['commit', '-q', '-m', `audit checkpoint ${log.origin} ${newest.size}`]);
    await target.beforePush?.();
    const pushed = await git(target.cloneDir, ['push', '-q', 'origin', `HEAD:refs/heads/${target.branch}`]);
    if (pushed.code === 0) return { kind: 'published', size: newest.size };
    const movedMeanwhile =
      /non-fast-forward|fetch first|rejected/i.test(pushed.stderr) && !/protected|hook declined|permission|denied/i.test(pushed.stderr);
    if (!movedMeanwhile || attempt >= PUSH_ATTEMPTS)
      throw new WitnessUnreachable(`git push to ${target.remote} (${target.branch}) was refused: ${oneLine(pushed.stderr)}`);
  }
}
