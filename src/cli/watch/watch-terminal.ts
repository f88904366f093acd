import { toErrorShape } from '../../domain/errors.js';
import type { StepRecord } from '../../domain/step-record.js';
import type { ExecutorClient } from '../../ipc/client/client.js';
import { getWholeStep } from '../../ipc/client/whole-step-record.js';
import {
  handleKey,
  initialWatchState,
  keysOf,
  tick,
  withRecord,
  type HeldDecision,
  type WatchState,
  type WatchStep,
} from './watch-queue.js';
import { renderWatch } from './watch-screen.js';

/*
 * The thin shell around the terminal queue: raw keys in, the screen out, decisions to the host over
 * the person's CLI channel, the host's step events in. Whatever ends it (q, Ctrl-C, a signal, a
 * crash, the host going away) puts the terminal back as it was: cooked mode, the normal screen, the
 * cursor shown.
 */

const ENTER_SCREEN = '\u001b[?1049h\u001b[?25l';
const LEAVE_SCREEN = '\u001b[?25h\u001b[?1049l';

function decisionWords(decision: HeldDecision, record: StepRecord): string {
  if (decision.kind === 'reject') return `Rejected ${record.step.id}; your reason went back to the agent.`;
  if (record.status === 'executed') return `Approved ${record.step.id}: done.`;
  if (record.status === 'failed')
    return `Approved ${record.step.id}, but it failed: ${record.error?.code ?? ''} ${record.error?.message ?? ''}`.trim();
  return `Approved ${record.step.id}.`;
}

export async function runWatch(api: ExecutorClient, options: { undoMs: number }): Promise<void> {
  const stdin = process.stdin;
  const stdout = process.stdout;
  let state: WatchState = initialWatchState(options.undoMs);
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    try {
      if (stdin.isTTY) stdin.setRawMode(false);
    } catch {
      /* the terminal is already gone */
    }
    stdout.write(LEAVE_SCREEN);
  };
  const draw = () => {
    if (restored || editing) return;
    const lines = renderWatch(state, { rows: stdout.rows ?? 24, columns: stdout.columns ?? 80 });
    stdout.write(`\u001b[H\u001b[2J${lines.join('\r\n')}`);
  };
  // Each step's updates in the order they came: a slow read of an older version never overwrites a newer one.
  const perStep = new Map<string, Promise<void>>();
  const refresh = (stepId: string, known?: StepRecord) => {
    const previous = perStep.get(stepId) ?? Promise.resolve();
    const next = previous.then(async () => {
      try {
        const record = known && (known.status !== 'awaiting_consent' || known.approval !== null) ? known : await getWholeStep(api, stepId);
        state = withRecord(state, record);
      } catch (error) {
        state = { ...state, message: `${stepId}: ${toErrorShape(error).message}` };
      }
      draw();
    });
    perStep.set(stepId, next);
    return next;
  };
  const sending = new Set<Promise<void>>();
  const send = (decision: HeldDecision) => {
    const sent = (async () => {
      try {
        const record =
          decision.kind === 'approve'
            ? await api.approve({ stepId: decision.stepId, previewHash: decision.previewHash })
            : await api.reject({ stepId: decision.stepId, reason: decision.reason ?? '' });
        state = { ...withRecord(state, record), message: decisionWords(decision, record) };
      } catch (error) {
        const shaped = toErrorShape(error);
        // The binding: what was approved is what was shown. A changed preview is refused by the host; the new one is shown instead.
        await refresh(decision.stepId);
        state = {
          ...state,
          selectedId: decision.stepId,
          message:
            shaped.code === 'STEP_CHANGED'
              ? `Not approved: the preview of ${decision.stepId} changed since it was shown. The new one is on screen: read it, then decide again.`
              : `${decision.kind === 'approve' ? 'Not approved' : 'Not rejected'}: ${decision.stepId}: ${shaped.code}: ${shaped.message}`,
        };
      }
      draw();
    })();
    sending.add(sent);
    void sent.finally(() => sending.delete(sent));
  };

  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let editing = false;
  /** e: the person's editor on the step's content or command, the terminal handed over while it runs. */
  const edit = async (stepId: string, stepHash: string) => {
    const record = state.waiting.find((known) => known.step.id === stepId);
    const { editableText, editInEditor } = await import('../run-decision.js');
    const editable = record ? editableText(record) : null;
    if (!record || !editable) {
      state = { ...state, message: "Only a file write's content or a command line can be edited; approve or reject this step." };
      return draw();
    }
    editing = true;
    stdin.setRawMode(false);
    stdin.pause();
    stdout.write(LEAVE_SCREEN);
    let message: string;
    try {
      const edited = editInEditor(editable.text, editable.suffix);
      const changed = edited === null ? null : editable.kind === 'command' ? edited.trim() : edited;
      const before = editable.kind === 'command' ? editable.text.trim() : editable.text;
      if (changed === null) message = 'The editor did not finish; nothing was changed.';
      else if (changed === before || changed === '') message = 'No change: the step is as proposed.';
      else {
        await api.editStep({ stepId, ...(editable.kind === 'content' ? { content: changed } : { command: changed }), stepHash });
        message = `Your version of ${stepId} is weighed and previewed again; it comes back here to decide.`;
      }
    } catch (error) {
      const shaped = toErrorShape(error);
      message = `Not edited: ${shaped.code}: ${shaped.message}`;
    } finally {
      editing = false;
      stdout.write(ENTER_SCREEN);
      stdin.setRawMode(true);
      stdin.resume();
    }
    state = { ...state, message };
    await refresh(stepId);
  };
  const apply = (step: WatchStep) => {
    state = step.state;
    for (const effect of step.effects) {
      if (effect.kind === 'send') send(effect.decision);
      else if (effect.kind === 'edit') void edit(effect.stepId, effect.stepHash);
      else finish();
    }
    draw();
  };
  const onSignal = () => apply(handleKey(state, { kind: 'interrupt' }, Date.now()));
  const onCrash = (error: unknown) => {
    restore();
    process.stderr.write(`executor watch: ${toErrorShape(error).message}\n`);
    process.exit(2);
  };
  process.on('exit', restore);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  const onResize = () => draw();
  stdout.on('resize', onResize);
  const clock = setInterval(() => {
    if (state.held.length) apply(tick(state, Date.now()));
  }, 200);
  try {
    stdout.write(ENTER_SCREEN);
    stdin.setRawMode(true);
    stdin.setEncoding('utf8');
    stdin.on('data', (chunk: string) => {
      if (editing) return;
      for (const key of keysOf(chunk)) apply(handleKey(state, key, Date.now()));
    });
    stdin.resume();
    draw();
    // Subscribed before the list is read: a step proposed in between is in one or the other.
    await api.on('step', (record) => void refresh(record.step.id, record));
    for (const record of await api.listSteps({ status: ['awaiting_consent'] })) await refresh(record.step.id);
    await finished;
    // Decisions the person made are all sent before the queue closes.
    while (sending.size) await Promise.allSettled([...sending]);
  } finally {
    clearInterval(clock);
    stdout.off('resize', onResize);
    stdin.pause();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    restore();
    process.off('exit', restore);
  }
}
