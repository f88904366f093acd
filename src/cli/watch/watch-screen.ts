import { visibleLine } from '../../domain/visible-text.js';
import type { StepRecord } from '../../domain/step-record.js';
import { detailText, previewHashText, summaryLine } from '../render.js';
import { selectedStep, visibleSteps, type WatchState } from './watch-queue.js';

/*
 * The terminal queue drawn as lines of text, from its state alone: the shell clears the screen and
 * writes them. Every line is cut to the terminal's width and the whole to its height, so the key
 * line at the bottom is always there. Text from steps is escaped (render.ts and visibleLine): a
 * step's content cannot move the cursor or recolour the queue.
 */

export interface ScreenSize {
  rows: number;
  columns: number;
}

const KEYS_QUEUE = 'a/y approve · r reject · d whole diff · e edit · j/k next/prev · / id prefix · u undo · q quit';
const KEYS_WHOLE = 'space/b page · j/k line · a/y approve · r reject · e edit · d back · q back';

/** A step as `steps show` prints it (action, risk, reasons, preview, diff), one screen line per line. */
function previewLines(record: StepRecord): string[] {
  return detailText(record).split('\n').map(visibleLine);
}

function cut(text: string, columns: number): string {
  const chars = [...text];
  return chars.length <= columns ? text : `${chars.slice(0, Math.max(1, columns - 1)).join('')}…`;
}

export function renderWatch(state: WatchState, size: ScreenSize): string[] {
  const rows = Math.max(size.rows, 8);
  const columns = Math.max(size.columns, 20);
  const visible = visibleSteps(state);
  const selected = selectedStep(state);
  const header = `Executor · ${visible.length === 1 ? '1 step waits' : `${visible.length} steps wait`} for you${state.held.length ? ` · ${state.held.length} decision(s) held for undo` : ''}`;
  const footer: string[] = [];
  if (state.mode.kind === 'reason')
    footer.push(`Reason for rejecting ${selected?.step.id ?? ''}: ${state.mode.text}▏  (Enter rejects, Esc keeps it)`);
  else if (state.mode.kind === 'prefix') footer.push(`Go to step id starting with: ${state.mode.text}▏  (Enter goes, Esc stays)`);
  if (state.message) footer.push(state.message);
  footer.push(state.mode.kind === 'whole' ? KEYS_WHOLE : KEYS_QUEUE);
  const room = rows - 1 - footer.length;
  let body: string[];
  if (!selected) {
    body = ['', 'Nothing waits for your decision. New steps show here as agents propose them.'];
  } else if (state.mode.kind === 'whole') {
    const all = previewLines(selected);
    const scroll = Math.min(state.mode.scroll, Math.max(0, all.length - room));
    body = all.slice(scroll, scroll + room);
    if (scroll + room < all.length) body[body.length - 1] = `… ${all.length - scroll - room + 1} more lines (space)`;
  } else {
    // The list: a few lines, the selected one marked; then as much of its preview as fits.
    const listRoom = Math.min(visible.length, Math.max(3, Math.floor(room / 3)));
    const at = visible.indexOf(selected);
    const first = Math.min(Math.max(0, at - Math.floor(listRoom / 2)), Math.max(0, visible.length - listRoom));
    const list = visible.slice(first, first + listRoom).map((record) => `${record === selected ? '>' : ' '} ${summaryLine(record)}`);
    const detail = previewLines(selected);
    const detailRoom = room - list.length - 2;
    const shown = detail.slice(0, Math.max(0, detailRoom));
    if (detail.length > shown.length && shown.length > 0)
      shown[shown.length - 1] = `… ${detail.length - shown.length + 1} more lines: d shows the whole step and diff`;
    body = [...list, '', `Preview ${previewHashText(selected)} (approving binds to it)`, ...shown].slice(0, room);
  }
  const lines = [header, ...body];
  while (lines.length < rows - footer.length) lines.push('');
  // Every line escaped once more (a title or a reason in a message): visibleLine leaves what is already escaped as it is.
  return [...lines, ...footer].map((text) => cut(visibleLine(text), columns));
}
