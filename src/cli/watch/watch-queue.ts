import type { StepRecord } from '../../domain/step-record.js';

/*
 * `executor watch`: the terminal queue's state and what each key does to it, with no I/O. The shell
 * (commands/watch.ts) feeds it keys, host events and the clock, carries out the effects it returns
 * (send an approval or a rejection, quit), and draws it with watch-screen.ts. Kept pure so every key
 * path is tested without a terminal, and the binding rules read in one place: an approval carries
 * the preview hash of the record on screen when the key was pressed, never one fetched later.
 */

/** A key as the shell decoded it: one character, or a named key. */
export type WatchKey =
  { kind: 'char'; char: string } | { kind: 'enter' | 'escape' | 'backspace' | 'up' | 'down' | 'pageDown' | 'pageUp' | 'interrupt' };

/** A decision made and held for the undo time before it is sent, as the window holds it. */
export interface HeldDecision {
  stepId: string;
  title: string;
  kind: 'approve' | 'reject';
  /** approve: the preview hash of what was on screen when the person pressed the key. */
  previewHash: string | null;
  reason?: string;
  sendsAt: number;
}

export type WatchMode =
  { kind: 'queue' } | { kind: 'whole'; scroll: number } | { kind: 'reason'; text: string } | { kind: 'prefix'; text: string };

export interface WatchState {
  /** The steps waiting for the person, oldest first (the order they came). */
  waiting: StepRecord[];
  /** The id of the step on screen (kept when others come and go). */
  selectedId: string | null;
  mode: WatchMode;
  held: HeldDecision[];
  /** The last thing said to the person: what happened, or why a key did nothing. */
  message: string | null;
  undoMs: number;
}

/** edit: the shell opens the person's editor on the step shown (its hash binds the edit to what was on screen). */
export type WatchEffect = { kind: 'send'; decision: HeldDecision } | { kind: 'quit' } | { kind: 'edit'; stepId: string; stepHash: string };

export interface WatchStep {
  state: WatchState;
  effects: WatchEffect[];
}

export function initialWatchState(undoMs: number): WatchState {
  return { waiting: [], selectedId: null, mode: { kind: 'queue' }, held: [], message: null, undoMs };
}

/** The waiting steps the person sees: not those held for undo (they come back on `u`). */
export function visibleSteps(state: WatchState): StepRecord[] {
  const held = new Set(state.held.map((decision) => decision.stepId));
  return state.waiting.filter((record) => !held.has(record.step.id));
}

/** The step on screen, or null when none waits. */
export function selectedStep(state: WatchState): StepRecord | null {
  const visible = visibleSteps(state);
  return visible.find((record) => record.step.id === state.selectedId) ?? visible[0] ?? null;
}

/** A step record as it is now (a host event or a fresh read): it waits for the person, or it leaves the queue. */
export function withRecord(state: WatchState, record: StepRecord): WatchState {
  const index = state.waiting.findIndex((known) => known.step.id === record.step.id);
  // Approved already (it waits only for an earlier step of its plan): no longer the person's to decide.
  if (record.status !== 'awaiting_consent' || record.approval !== null) {
    if (index < 0) return state;
    const next = { ...state, waiting: state.waiting.filter((_, at) => at !== index) };
    return keepSelection(state, next);
  }
  const waiting =
    index < 0 ? [...state.waiting, record].sort(comeOrder) : state.waiting.map((known, at) => (at === index ? record : known));
  return keepSelection(state, { ...state, waiting });
}

/** The order steps came in: proposed first, and in a plan by position. */
function comeOrder(left: StepRecord, right: StepRecord): number {
  return (
    left.createdAt.localeCompare(right.createdAt) || left.step.planId.localeCompare(right.step.planId) || left.position - right.position
  );
}

/** When the selected step leaves, the one after it (or before it) is selected, never a jump to the top. */
function keepSelection(before: WatchState, after: WatchState): WatchState {
  const visible = visibleSteps(after);
  if (visible.some((record) => record.step.id === after.selectedId)) return after;
  const old = visibleSteps(before).findIndex((record) => record.step.id === before.selectedId);
  const replacement = visible[Math.min(Math.max(old, 0), visible.length - 1)] ?? null;
  const leftWhole = after.mode.kind === 'whole' || after.mode.kind === 'reason';
  return { ...after, selectedId: replacement?.step.id ?? null, mode: leftWhole ? { kind: 'queue' } : after.mode };
}

function move(state: WatchState, by: number): WatchState {
  const visible = visibleSteps(state);
  if (visible.length === 0) return { ...state, message: 'No step waits for you.' };
  const current = Math.max(
    0,
    visible.findIndex((record) => record.step.id === selectedStep(state)?.step.id),
  );
  const next = Math.min(Math.max(current + by, 0), visible.length - 1);
  return { ...state, selectedId: visible[next]!.step.id, message: null };
}

/** The step a typed id prefix names: unique among the waiting steps, or the words that say why not. */
export function stepByPrefix(state: WatchState, prefix: string): StepRecord | string {
  const wanted = prefix.trim();
  if (wanted === '') return 'Type the first characters of a step id.';
  const matches = visibleSteps(state).filter((record) => record.step.id.startsWith(wanted));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) return `No waiting step has an id starting with "${wanted}".`;
  return `${matches.length} waiting steps start with "${wanted}" (${matches
    .slice(0, 4)
    .map((record) => record.step.id)
    .join(', ')}${matches.length > 4 ? ', …' : ''}): type more of the id.`;
}

function hold(state: WatchState, decision: Omit<HeldDecision, 'sendsAt'>, now: number): WatchStep {
  const held: HeldDecision = { ...decision, sendsAt: now + state.undoMs };
  const words = decision.kind === 'approve' ? 'Approving' : 'Rejecting';
  const next = keepSelection(state, { ...state, held: [...state.held, held], mode: { kind: 'queue' } });
  // No undo time: sent at once, as the window does with "Undo for 0 s".
  if (state.undoMs <= 0) {
    return {
      state: { ...next, held: next.held.filter((other) => other !== held), message: `${words} ${decision.stepId}…` },
      effects: [{ kind: 'send', decision: held }],
    };
  }
  return {
    state: { ...next, message: `${words} ${decision.stepId} (${decision.title}) in ${Math.ceil(state.undoMs / 1000)} s: u to undo.` },
    effects: [],
  };
}

/** The clock moved: the held decisions whose undo time is over are sent. */
export function tick(state: WatchState, now: number): WatchStep {
  const due = state.held.filter((decision) => decision.sendsAt <= now);
  if (due.length === 0) return { state, effects: [] };
  return {
    state: { ...state, held: state.held.filter((decision) => decision.sendsAt > now) },
    effects: due.map((decision) => ({ kind: 'send', decision })),
  };
}

/** Leaving sends every held decision first: a decision the person made is never lost by quitting. */
function quit(state: WatchState): WatchStep {
  return {
    state: { ...state, held: [] },
    effects: [...state.held.map((decision): WatchEffect => ({ kind: 'send', decision })), { kind: 'quit' }],
  };
}

const titleOf = (record: StepRecord) => record.step.meta.purpose ?? record.step.action;

export function handleKey(state: WatchState, key: WatchKey, now: number): WatchStep {
  if (key.kind === 'interrupt') return quit(state);
  const mode = state.mode;
  if (mode.kind === 'reason' || mode.kind === 'prefix') return typing(state, mode, key, now);
  const selected = selectedStep(state);
  if (mode.kind === 'whole') {
    if (key.kind === 'down' || key.kind === 'pageDown' || (key.kind === 'char' && (key.char === ' ' || key.char === 'j')))
      return {
        state: {
          ...state,
          mode: { kind: 'whole', scroll: mode.scroll + (key.kind === 'down' || (key.kind === 'char' && key.char === 'j') ? 1 : 20) },
        },
        effects: [],
      };
    if (key.kind === 'up' || key.kind === 'pageUp' || (key.kind === 'char' && (key.char === 'b' || key.char === 'k')))
      return {
        state: {
          ...state,
          mode: {
            kind: 'whole',
            scroll: Math.max(0, mode.scroll - (key.kind === 'up' || (key.kind === 'char' && key.char === 'k') ? 1 : 20)),
          },
        },
        effects: [],
      };
    if (key.kind === 'escape' || (key.kind === 'char' && (key.char === 'd' || key.char === 'q')))
      return { state: { ...state, mode: { kind: 'queue' } }, effects: [] };
    // a and r decide from the whole view as well: what is on screen is the same step and preview.
  }
  if (key.kind === 'down' || (key.kind === 'char' && (key.char === 'j' || key.char === 'n'))) return { state: move(state, 1), effects: [] };
  if (key.kind === 'up' || (key.kind === 'char' && (key.char === 'k' || key.char === 'p'))) return { state: move(state, -1), effects: [] };
  if (key.kind !== 'char' && key.kind !== 'enter') return { state, effects: [] };
  const char = key.kind === 'char' ? key.char : '\r';
  switch (char) {
    case 'q':
      return quit(state);
    case 'u': {
      const last = state.held.at(-1);
      if (!last) return { state: { ...state, message: 'Nothing to undo: every decision was already sent.' }, effects: [] };
      return {
        state: { ...state, held: state.held.slice(0, -1), selectedId: last.stepId, message: `Undone: ${last.stepId} waits for you again.` },
        effects: [],
      };
    }
    case '/':
    case 'g':
      return { state: { ...state, mode: { kind: 'prefix', text: '' }, message: null }, effects: [] };
  }
  if (!selected) return { state: { ...state, message: 'No step waits for you.' }, effects: [] };
  switch (char) {
    // y as well: `executor run` asks with the same keys, and y is the usual yes.
    case 'a':
    case 'y':
      return hold(state, { stepId: selected.step.id, title: titleOf(selected), kind: 'approve', previewHash: selected.previewHash }, now);
    case 'e':
      return {
        state: { ...state, selectedId: selected.step.id, mode: { kind: 'queue' }, message: null },
        effects: [{ kind: 'edit', stepId: selected.step.id, stepHash: selected.stepHash }],
      };
    case 'r':
      return { state: { ...state, selectedId: selected.step.id, mode: { kind: 'reason', text: '' }, message: null }, effects: [] };
    case 'd':
    case '\r':
      return { state: { ...state, selectedId: selected.step.id, mode: { kind: 'whole', scroll: 0 }, message: null }, effects: [] };
  }
  return { state: { ...state, message: `"${char}" does nothing here; the keys are on the last line.` }, effects: [] };
}

function typing(state: WatchState, mode: Extract<WatchMode, { kind: 'reason' | 'prefix' }>, key: WatchKey, now: number): WatchStep {
  if (key.kind === 'escape')
    return { state: { ...state, mode: { kind: 'queue' }, message: mode.kind === 'reason' ? 'Not rejected.' : null }, effects: [] };
  if (key.kind === 'backspace') return { state: { ...state, mode: { ...mode, text: [...mode.text].slice(0, -1).join('') } }, effects: [] };
  if (key.kind === 'char') {
    // Typed text stays one line of printable characters: a pasted newline or escape is not part of a reason.
    const printable = key.char.replace(/[\u0000-\u001f\u007f]/g, '');
    return { state: { ...state, mode: { ...mode, text: (mode.text + printable).slice(0, 2000) } }, effects: [] };
  }
  if (key.kind !== 'enter') return { state, effects: [] };
  if (mode.kind === 'prefix') {
    const found = stepByPrefix(state, mode.text);
    if (typeof found === 'string') return { state: { ...state, message: found }, effects: [] };
    return { state: { ...state, selectedId: found.step.id, mode: { kind: 'queue' }, message: null }, effects: [] };
  }
  const reason = mode.text.trim();
  if (reason === '')
    return { state: { ...state, message: 'A rejection needs a reason (it goes back to the agent); Esc keeps the step.' }, effects: [] };
  const selected = selectedStep(state);
  if (!selected) return { state: { ...state, mode: { kind: 'queue' }, message: 'The step is no longer waiting.' }, effects: [] };
  return hold(
    state,
    { stepId: selected.step.id, title: titleOf(selected), kind: 'reject', previewHash: selected.previewHash, reason },
    now,
  );
}

/** Keys from raw terminal bytes: arrows and Page keys by their escape sequences, Enter, Backspace, Ctrl-C; everything else one character at a time. */
export function keysOf(chunk: string): WatchKey[] {
  const keys: WatchKey[] = [];
  const named: [string, WatchKey][] = [
    ['\u001b[A', { kind: 'up' }],
    ['\u001b[B', { kind: 'down' }],
    ['\u001bOA', { kind: 'up' }],
    ['\u001bOB', { kind: 'down' }],
    ['\u001b[5~', { kind: 'pageUp' }],
    ['\u001b[6~', { kind: 'pageDown' }],
  ];
  let at = 0;
  outer: while (at < chunk.length) {
    for (const [sequence, key] of named) {
      if (chunk.startsWith(sequence, at)) {
        keys.push(key);
        at += sequence.length;
        continue outer;
      }
    }
    const char = String.fromCodePoint(chunk.codePointAt(at)!);
    at += char.length;
    if (char === '\r' || char === '\n') keys.push({ kind: 'enter' });
    else if (char === '\u007f' || char === '\b') keys.push({ kind: 'backspace' });
    else if (char === '\u0003' || char === '\u0004') keys.push({ kind: 'interrupt' });
    else if (char === '\u001b') {
      // An escape sequence this queue does not use (F-keys, arrows left and right) is skipped whole, never read as letters.
      const rest = /^\u001b(\[[0-9;]*[A-Za-z~]|O[A-Za-z])/.exec(chunk.slice(at - 1));
      if (rest) at += rest[0].length - 1;
      else keys.push({ kind: 'escape' });
    } else keys.push({ kind: 'char', char });
  }
  return keys;
}
