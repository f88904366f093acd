import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SignedNoteError, openNote, type NoteVerifier } from '../format/signed-note.js';
import { parseCheckpointText, type TlogCheckpoint } from '../format/tlog-checkpoint.js';
import { WitnessUnreachable } from './witness-client.js';
import { originHash } from './witness-state.js';
import { standingAgainstAll, type WitnessedLog } from './witnessed-log.js';

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

function git(cwd: string, args: string[], maxBuffer = 64 * 1024 * 1024): Promise<GitResult> {
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
        maxBuffer,
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

/** A checkpoint note of this log found on the branch, with the commit that added it. */
export interface BranchNote {
  checkpoint: TlogCheckpoint;
  note: string;
  /** The commit that added the note (the tip's, for a note found only in the tip's file). */
  commit: string;
  /** When that commit was made, as its committer's clock said (ISO 8601); null when not known. */
  committedAt: string | null;
}

/** Everything the branch ever said of this log. */
export interface BranchHistory {
  /** Every note this log's keys signed that any commit of the branch ever added, each once, oldest commit first. */
  notes: BranchNote[];
  /** The last note of the file at the tip, when it verifies. */
  newest: BranchNote | undefined;
  /** Notes in this log's file that this log's keys did not sign (or that name another log), by commit. */
  unverified: { commit: string; reason: string }[];
  /** The tip's last note is one of them: someone wrote to the branch who should not have. */
  newestUnverified: boolean;
  /** The tip commit read. */
  tip: string;
}

const LOG_BUFFER_BYTES = 512 * 1024 * 1024;

interface AddedText {
  commit: string;
  committedAt: string | null;
  text: string;
}

/**
 * The lines each commit added to the file, hunk by hunk, for every commit reachable from `range`'s
 * tip (a merge against each of its parents, so no side of a merge hides a note). A diff, not every
 * version of the file: each version holds all the notes before it, and reading them all would cost
 * the square of the branch's length. An honest append is one hunk of whole notes. The repository's
 * own settings (attributes, diff drivers, colour, prefixes) are turned off: the branch is data.
 */
async function addedTexts(target: GitWitnessTarget, file: string, range: string): Promise<AddedText[]> {
  const result = await git(
    target.cloneDir,
    [
      '-c',
      'diff.noprefix=false',
      '-c',
      'log.showSignature=false',
      'log',
      '--reverse',
      '--full-history',
      '--no-renames',
      '--diff-merges=separate',
      '--text',
      '--no-ext-diff',
      '--no-textconv',
      '--no-color',
      '--diff-algorithm=myers',
      '--unified=0',
      '--format=%x01%H %ct',
      range,
      '--',
      file,
    ],
    LOG_BUFFER_BYTES,
  );
  if (result.code !== 0) throw new WitnessUnreachable(`git log of ${target.remote} (${target.branch}): ${oneLine(result.stderr)}`);
  const added: AddedText[] = [];
  let commit = '';
  let committedAt: string | null = null;
  let hunk: string[] | undefined;
  const flush = () => {
    if (hunk?.length) added.push({ commit, committedAt, text: `${hunk.join('\n')}\n` });
    hunk = undefined;
  };
  for (const line of result.stdout.split('\n')) {
    if (line.startsWith('\u0001')) {
      flush();
      const [hash, seconds] = line.slice(1).split(' ');
      commit = hash ?? '';
      committedAt = seconds && /^\d+$/.test(seconds) ? new Date(Number(seconds) * 1000).toISOString() : null;
    } else if (line.startsWith('diff --git ')) flush();
    else if (line.startsWith('@@ ')) {
      flush();
      hunk = [];
    } else if (hunk && line.startsWith('+')) hunk.push(line.slice(1));
  }
  flush();
  return added;
}

/** A note of this log, or why it is not one. */
function openLogNote(note: string, origin: string, verifiers: NoteVerifier[]): TlogCheckpoint | string {
  try {
    const checkpoint = parseCheckpointText(openNote(note, verifiers).text);
    return checkpoint.origin === origin ? checkpoint : `it names the log ${checkpoint.origin}`;
  } catch (error) {
    if (error instanceof SignedNoteError) return error.message;
    throw error;
  }
}

/**
 * Everything the branch ever said of this log: the notes every commit added (with `since`, only
 * the commits after it: the caller read the rest before), and the notes of the file at the tip.
 * Undefined when neither holds a note.
 */
async function branchHistory(
  target: GitWitnessTarget,
  origin: string,
  verifiers: NoteVerifier[],
  since?: string,
): Promise<BranchHistory | undefined> {
  const ref = `refs/remotes/origin/${target.branch}`;
  const tip = (await mustGit(target.cloneDir, ['rev-parse', '--verify', `${ref}^{commit}`])).trim();
  const file = checkpointFilePath(origin);
  const shown = await git(target.cloneDir, ['show', `${ref}:${file}`]);
  const atTip = shown.code === 0 ? splitCheckpointNotes(shown.stdout) : [];
  const added = await addedTexts(target, file, since ? `${since}..${ref}` : ref);
  const opened = new Map<string, TlogCheckpoint | string>();
  const notes: BranchNote[] = [];
  const unverified: { commit: string; reason: string }[] = [];
  const take = (note: string, commit: string, committedAt: string | null) => {
    if (opened.has(note)) return;
    const checkpoint = openLogNote(note, origin, verifiers);
    opened.set(note, checkpoint);
    if (typeof checkpoint === 'string') unverified.push({ commit, reason: checkpoint });
    else notes.push({ checkpoint, note, commit, committedAt });
  };
  for (const text of added) for (const note of splitCheckpointNotes(text.text)) take(note, text.commit, text.committedAt);
  // The tip's file too (each note once: those a diff showed are not checked again); after `since`, its last note alone.
  for (const note of since ? atTip.slice(-1) : atTip) take(note, tip, null);
  if (opened.size === 0 && atTip.length === 0) return undefined;
  const last = atTip.at(-1);
  const newestUnverified = last !== undefined && typeof opened.get(last) === 'string';
  const newest = last === undefined || newestUnverified ? undefined : notes.find((candidate) => candidate.note === last);
  return { notes, newest, unverified, newestUnverified, tip };
}

/** Fetches the branch and reads all it ever said of this log (for verify); undefined when it holds nothing of it. */
export async function readGitWitness(
  target: GitWitnessTarget,
  log: Pick<WitnessedLog, 'origin' | 'verifiers'>,
): Promise<BranchHistory | undefined> {
  await prepareClone(target);
  if (!(await fetchBranch(target))) return undefined;
  return branchHistory(target, log.origin, log.verifiers);
}

/**
 * What this process already read of a branch, found consistent with its log: the tip, and the
 * largest note up to it. The next publish reads only the commits after that tip.
 */
const readBefore = new Map<string, { tip: string; largest: BranchNote }>();

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
    if (exists) {
      // Every note the branch ever held counts, not only its newest: a restored copy may have pushed its own older one.
      const cacheKey = [target.cloneDir, target.remote, target.branch, log.origin].join('\0');
      const before = readBefore.get(cacheKey);
      const history = await branchHistory(target, log.origin, log.verifiers, before?.tip);
      if (history?.newestUnverified)
        throw new WitnessUnreachable(
          `${target.remote} (${target.branch}): its newest checkpoint note does not verify with this log's key (${history.unverified.at(-1)?.reason})`,
        );
      const verdict = standingAgainstAll(log, [...(before ? [before.largest] : []), ...(history?.notes ?? [])], (note) => note.checkpoint);
      if (verdict && verdict.standing !== 'consistent')
        return { kind: 'diverged', standing: verdict.standing, remote: verdict.against.checkpoint };
      if (verdict && history) readBefore.set(cacheKey, { tip: history.tip, largest: verdict.against });
      if (verdict && verdict.against.checkpoint.size >= newest.size) return { kind: 'up_to_date', size: verdict.against.checkpoint.size };
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
