import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { toErrorShape } from '../domain/errors.js';
import type { StepRecord } from '../domain/step-record.js';
import { commandLineOf } from '../domain/shell-quote.js';
import { visibleLine, visibleOutput } from '../domain/visible-text.js';
import type { ExecutorClient } from '../ipc/client/client.js';
import { awaitStepLeaves } from '../ipc/client/preparation-wait.js';
import { getWholeStep } from '../ipc/client/whole-step-record.js';
import { detailText } from './render.js';

/*
 * `executor run` on a terminal decides the run's own waiting step where the person is watching, as
 * Claude Code and Codex do: the step with its risk, reasons and preview, then one key. The keys are
 * `executor watch`'s (a approve, r reject with a reason, d the whole of it, e edit; y and n as the
 * usual yes and no), so a hand that learned one never approves by surprise in the other.
 *
 * The approval carries the preview hash of the record printed, never one read later: a step that
 * changed meanwhile (an edit in the window, a rebuilt preview) is refused by the host and shown again.
 * Ctrl-C decides nothing: the step keeps waiting (in the window, `executor watch`, `executor approve`)
 * and the command stops following, as Ctrl-C does everywhere else in `executor run`.
 *
 * A decision is held for the undo time before it is sent, as the window and `executor watch` hold it:
 * u takes it back, any other key sends it at once, Ctrl-C sends nothing and stops following.
 */

/** What the person's decision came to: decided (here or elsewhere), left waiting (s), or stop following (Ctrl-C). */
export type InlineOutcome = 'decided' | 'skipped' | 'stop';

/** The most lines of a step shown before asking; d shows the rest. */
const SHOWN_LINES = 60;

const KEYS_LINE =
  'a approve · r reject with a reason · d show all · e edit · s leave it waiting (decide in the window or `executor watch`) · Ctrl-C stop following';

const write = (text: string) => process.stdout.write(`${visibleOutput(text)}\n`);

/** The step as it is printed before the question: whole when short, else its first lines and how many more. */
function shownText(record: StepRecord, limits: Parameters<typeof detailText>[1], whole: boolean): string {
  const lines = detailText(record, limits).split('\n');
  if (whole || lines.length <= SHOWN_LINES) return lines.join('\n');
  return [...lines.slice(0, SHOWN_LINES), `… ${lines.length - SHOWN_LINES} more lines: d shows all.`].join('\n');
}

type Key = { kind: 'char'; char: string } | { kind: 'interrupt' } | { kind: 'gone' } | { kind: 'moved' } | { kind: 'timeout' };

/**
 * One key from the raw terminal, or the step moving under the question (decided in the window, its
 * preview rebuilt): the question ends at once rather than approve what is no longer on screen. With
 * `timeoutMs`, the time running out is an answer too (an undo hold's end).
 */
function readKey(moved: Promise<void>, timeoutMs?: number): Promise<Key> {
  const stdin = process.stdin;
  return new Promise<Key>((resolve) => {
    if (stdin.readableEnded) return resolve({ kind: 'gone' });
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => done({ kind: 'timeout' }), timeoutMs);
    let over = false;
    const done = (key: Key) => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      try {
        stdin.setRawMode(false);
      } catch {
        /* the terminal is gone */
      }
      stdin.pause();
      resolve(key);
    };
    const onData = (chunk: Buffer | string) => {
      const text = chunk.toString();
      if (text.includes('\u0003') || text.includes('\u0004')) return done({ kind: 'interrupt' });
      // Escape sequences (arrows, F-keys) are not decisions; during a hold, Enter or a space sends as any key does.
      const char = text.startsWith('\u001b')
        ? ''
        : timeoutMs !== undefined && text.trim() === ''
          ? ' '
          : text.trim().charAt(0).toLowerCase();
      if (char) done({ kind: 'char', char });
    };
    const onEnd = () => done({ kind: 'gone' });
    void moved.then(() => done({ kind: 'moved' }));
    stdin.setRawMode(true);
    stdin.on('data', onData);
    stdin.once('end', onEnd);
    stdin.resume();
  });
}

/** A reason typed on one line (cooked mode); null when the person gave none (empty, Ctrl-C, Ctrl-D). */
async function readReason(): Promise<string | null> {
  if (process.stdin.readableEnded) return null;
  const readline = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await new Promise<string | null>((resolve) => {
      readline.once('close', () => resolve(null));
      readline.once('SIGINT', () => resolve(null));
      readline.question('Why? (goes back to the agent; empty keeps the step) ').then(resolve, () => resolve(null));
    });
    const reason = answer?.trim() ?? '';
    return reason === '' ? null : reason.slice(0, 2000);
  } finally {
    readline.close();
    process.stdin.pause();
  }
}

/** What an editor is given to change: a write's content or a command line; null for steps with no edit. */
export function editableText(record: StepRecord): { text: string; kind: 'content' | 'command'; suffix: string } | null {
  const args = record.step.args as { content?: unknown; path?: unknown; command?: string; argv?: string[] };
  if (record.step.action === 'writeFile' && typeof args.content === 'string') {
    const extension = typeof args.path === 'string' ? path.extname(args.path).slice(0, 16) : '';
    return { text: args.content, kind: 'content', suffix: /^\.[A-Za-z0-9]+$/.test(extension) ? extension : '.txt' };
  }
  if (record.step.action === 'runCommand') return { text: `${commandLineOf(args)}\n`, kind: 'command', suffix: '.sh' };
  return null;
}

/** The person's editor ($VISUAL, $EDITOR, else vi) on a private temp file; the file's text after, or null when the editor failed. */
export function editInEditor(text: string, suffix: string): string | null {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-edit-'));
  const file = path.join(folder, `step${suffix}`);
  try {
    fs.writeFileSync(file, text, { mode: 0o600 });
    const editor = process.env.VISUAL || process.env.EDITOR || 'vi';
    // As git runs core.editor: through the shell, so "code --wait" works; the file comes as $1, never spliced in.
    const ran = spawnSync('sh', ['-c', `${editor} "$1"`, 'sh', file], { stdio: 'inherit' });
    if (ran.error || ran.status !== 0) {
      write(
        `The editor (${visibleLine(editor)}) ${ran.error ? `did not start: ${ran.error.message}` : `exited with ${ran.status}`}; nothing was changed.`,
      );
      return null;
    }
    return fs.readFileSync(file, 'utf8');
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
}

/**
 * Shows the run's waiting step and takes the person's decision on it, until it is decided (here or
 * elsewhere), left waiting (s) or the person stops following (Ctrl-C).
 */
export async function decideInline(api: ExecutorClient, stepId: string, options: { undoMs?: number } = {}): Promise<InlineOutcome> {
  const undoMs = options.undoMs ?? 0;
  const limits = await api.getPolicy().catch(() => undefined);
  let whole = false;
  let shownHash: string | null | undefined;
  for (;;) {
    let record = await getWholeStep(api, stepId);
    // Its preview is still being made: the question waits for it, so the person decides on what will run.
    if (record.status === 'proposed' || record.status === 'evaluated') record = await awaitStepLeaves(api, stepId, record.status, 600_000);
    if (record.status === 'proposed' || record.status === 'evaluated') record = await getWholeStep(api, stepId);
    if (record.status !== 'awaiting_consent' || record.approval !== null) return 'decided';
    if (whole || shownHash !== record.previewHash || shownHash === undefined) {
      if (shownHash !== undefined && shownHash !== record.previewHash)
        write('The step changed since it was shown; here it is as it is now:');
      write('');
      write(shownText(record, limits, whole));
      shownHash = record.previewHash;
    }
    whole = false;
    write('');
    write(`Decide step ${visibleLine(stepId)}: ${KEYS_LINE}`);
    // The question ends when the step moves: decided in the window, withdrawn, or its preview made again.
    let off: (() => void) | undefined;
    const moved = new Promise<void>((resolve) => {
      void api
        .on('step', (changed) => {
          if (changed.step.id !== stepId) return;
          if (changed.status !== 'awaiting_consent' || changed.approval !== null || changed.previewHash !== record.previewHash) resolve();
        })
        .then((unsubscribe) => (off = unsubscribe));
    });
    const key = await readKey(moved);
    off?.();
    if (key.kind === 'char' && (key.char === 'a' || key.char === 'y' || key.char === 'r' || key.char === 'n') && undoMs > 0) {
      // A rejection's reason is asked first: the hold is of the decision as it would be sent.
      const reason = key.char === 'r' || key.char === 'n' ? await readReason() : undefined;
      if (reason === null) {
        write('Not rejected: a rejection needs a reason.');
        continue;
      }
      const held = await holdDecision(api, stepId, record.previewHash, reason === undefined ? 'Approved' : 'Rejected', undoMs);
      if (held === 'undone') {
        write(`Undone: nothing was sent; step ${visibleLine(stepId)} still waits for you.`);
        continue;
      }
      if (held === 'stop' || held === 'decided') return held;
      const sent = reason === undefined ? await sendApproval(api, stepId, record.previewHash) : await sendRejection(api, stepId, reason);
      if (sent === 'changed') {
        shownHash = undefined;
        continue;
      }
      return 'decided';
    }
    if (key.kind === 'interrupt') {
      write(
        `Nothing decided: step ${visibleLine(stepId)} still waits for you (in the window, \`executor watch\` or \`executor approve\`).`,
      );
      return 'stop';
    }
    // No time limit was set on this key: 'timeout' cannot come; said to the type checker as 'gone'.
    if (key.kind === 'gone' || key.kind === 'timeout') return 'skipped';
    if (key.kind === 'moved') {
      const now = await getWholeStep(api, stepId);
      if (now.status !== 'awaiting_consent' || now.approval !== null) {
        write(`Step ${visibleLine(stepId)} was decided elsewhere.`);
        return 'decided';
      }
      continue;
    }
    switch (key.char) {
      case 'a':
      case 'y':
        if ((await sendApproval(api, stepId, record.previewHash)) === 'changed') {
          shownHash = undefined;
          continue;
        }
        return 'decided';
      case 'r':
      case 'n': {
        const reason = await readReason();
        if (reason === null) {
          write('Not rejected: a rejection needs a reason.');
          continue;
        }
        await sendRejection(api, stepId, reason);
        return 'decided';
      }
      case 'd':
        whole = true;
        continue;
      case 'e': {
        const editable = editableText(record);
        if (!editable) {
          write("This step has nothing to edit here (a file write's content or a command line can be edited); approve or reject it.");
          continue;
        }
        const edited = editInEditor(editable.text, editable.suffix);
        if (edited === null) continue;
        const changed = editable.kind === 'command' ? edited.trim() : edited;
        if (changed === (editable.kind === 'command' ? editable.text.trim() : editable.text)) {
          write('No change: the step is as proposed.');
          continue;
        }
        if (editable.kind === 'command' && changed === '') {
          write('An empty command is not an edit; the step is as proposed.');
          continue;
        }
        try {
          await api.editStep({
            stepId,
            ...(editable.kind === 'content' ? { content: changed } : { command: changed }),
            stepHash: record.stepHash,
          });
          write('Your version is weighed and previewed again; decide on it:');
        } catch (error) {
          const shaped = toErrorShape(error);
          write(`Not edited: ${shaped.code}: ${shaped.message}`);
        }
        shownHash = undefined;
        continue;
      }
      case 's':
        write(`Left waiting: decide step ${visibleLine(stepId)} in the window or \`executor watch\`; the run goes on once it is decided.`);
        return 'skipped';
      default:
        write(`"${visibleLine(key.char)}" is not one of the keys.`);
    }
  }
}

/** Sends the approval of the preview that was shown; 'changed' when the step changed since (it is shown again). */
async function sendApproval(api: ExecutorClient, stepId: string, previewHash: string | null): Promise<'sent' | 'changed'> {
  try {
    const approved = await api.approve({ stepId, previewHash });
    write(`Approved step ${visibleLine(stepId)}${approved.status === 'executed' ? ': done.' : '.'}`);
    return 'sent';
  } catch (error) {
    const shaped = toErrorShape(error);
    if (shaped.code !== 'STEP_CHANGED') {
      write(`Not approved: ${shaped.code}: ${shaped.message}`);
      return 'sent';
    }
    write('Not approved: the step changed since it was shown. Read it again, then decide.');
    return 'changed';
  }
}

async function sendRejection(api: ExecutorClient, stepId: string, reason: string): Promise<'sent'> {
  try {
    await api.reject({ stepId, reason });
    write(`Rejected step ${visibleLine(stepId)}; your reason went back to the agent.`);
  } catch (error) {
    const shaped = toErrorShape(error);
    write(`Not rejected: ${shaped.code}: ${shaped.message}`);
  }
  return 'sent';
}

/**
 * The undo hold: the decision is said, and sent when the time passes or on any key but u. u takes it
 * back ('undone'); Ctrl-C sends nothing and stops following ('stop'); decided elsewhere meanwhile, the
 * hold ends with nothing sent ('decided').
 */
async function holdDecision(
  api: ExecutorClient,
  stepId: string,
  previewHash: string | null,
  words: 'Approved' | 'Rejected',
  undoMs: number,
): Promise<'send' | 'undone' | 'stop' | 'decided'> {
  write(`${words} — press u within ${Math.round(undoMs / 100) / 10} s to undo; any other key sends it now.`);
  let off: (() => void) | undefined;
  const moved = new Promise<void>((resolve) => {
    void api
      .on('step', (changed) => {
        if (changed.step.id !== stepId) return;
        if (changed.status !== 'awaiting_consent' || changed.approval !== null || changed.previewHash !== previewHash) resolve();
      })
      .then((unsubscribe) => (off = unsubscribe));
  });
  const key = await readKey(moved, undoMs);
  off?.();
  switch (key.kind) {
    case 'interrupt':
      write(`Nothing sent: step ${visibleLine(stepId)} still waits for you (in the window, \`executor watch\` or \`executor approve\`).`);
      return 'stop';
    case 'char':
      return key.char === 'u' ? 'undone' : 'send';
    case 'moved': {
      const now = await getWholeStep(api, stepId);
      if (now.status !== 'awaiting_consent' || now.approval !== null) {
        write(`Nothing sent: step ${visibleLine(stepId)} was decided elsewhere meanwhile.`);
        return 'decided';
      }
      // Its preview changed: the approval would be refused as STEP_CHANGED, and the step is shown again.
      return 'send';
    }
    default:
      return 'send';
  }
}

/**
 * The run's question answered in this terminal: one line, sent as the ask_user call's result. Empty
 * leaves it open (the window or `executor runs answer`); Ctrl-C stops following and decides nothing.
 */
export async function answerInline(api: ExecutorClient, runId: string, questionId: string): Promise<InlineOutcome> {
  if (process.stdin.readableEnded) return 'skipped';
  const readline = createInterface({ input: process.stdin, output: process.stdout });
  let interrupted = false;
  let elsewhere = false;
  let answer: string | null;
  // Answered in the window (or the run ended) meanwhile: the question here ends rather than wait on.
  const off = await api.on('agentRun', ({ run }) => {
    if (run.id !== runId || (run.status === 'awaiting_input' && run.question?.id === questionId)) return;
    elsewhere = true;
    readline.close();
  });
  try {
    answer = await new Promise<string | null>((resolve) => {
      readline.once('close', () => resolve(null));
      readline.once('SIGINT', () => {
        interrupted = true;
        resolve(null);
      });
      readline.question('Your answer (Enter on an empty line leaves it for later): ').then(resolve, () => resolve(null));
    });
  } finally {
    off();
    readline.close();
    process.stdin.pause();
  }
  if (elsewhere) {
    write('\nThe question was answered elsewhere, or the run moved on.');
    return 'decided';
  }
  if (interrupted) {
    write('Not answered: the question stays open (in the window, or `executor runs answer`).');
    return 'stop';
  }
  const text = answer?.trim() ?? '';
  if (text === '') {
    write('Left open: answer it in the window or with `executor runs answer`.');
    return 'skipped';
  }
  try {
    const run = await api.answerRun({ runId, text: text.slice(0, 4000) });
    if (run.question?.id === questionId) return 'skipped';
    write('Answered.');
  } catch (error) {
    const shaped = toErrorShape(error);
    write(`Not answered: ${shaped.code}: ${shaped.message}`);
  }
  return 'decided';
}
