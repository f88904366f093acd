/*
 * The live output of a step's sandbox run, as the host keeps it and a window shows it. Plain data and
 * pure functions: the host (src/executor/live-runs.ts) and the window (renderer) trim the same way.
 */

/** A step's dry run (its preview being prepared) or its real run (after approval). */
export type RunPhase = 'dryRun' | 'realRun';

/** How much of a running step's output the host keeps and a window shows: the last lines, like a terminal's bottom. */
export const LIVE_TAIL_BYTES = 8 * 1024;
export const LIVE_TAIL_LINES = 50;
/** Output events per run at most this often: a command printing a megabyte a second costs a few small frames, not thousands. */
export const LIVE_FRAME_INTERVAL_MS = 250;

export type OutputStream = 'stdout' | 'stderr';

/** One piece of output, in the order it came; a window shows stderr pieces apart from stdout. */
export interface TailChunk {
  stream: OutputStream;
  text: string;
}

/** What a window needs to show a step while it runs, and to catch up when it opens mid-run. */
export interface LiveRunView {
  stepId: string;
  /** What runs, in words (the step's one-line summary: a command's line, a snippet's language and purpose). */
  title: string;
  phase: RunPhase;
  startedAt: string;
  /** The tail of the output so far, oldest first, within LIVE_TAIL_BYTES and LIVE_TAIL_LINES. */
  tail: TailChunk[];
  /** Every byte the run printed so far, kept or not. */
  bytes: { stdout: number; stderr: number };
  /** Set once cancel was asked for: the run is being stopped. */
  cancelling: boolean;
}

/**
 * The `run` event: a run started, printed more, or ended. `chunks` are only what came since the
 * last frame (`replace`: they are the whole tail, when more came than the tail holds); a window
 * appends them to what it has and trims to the same bounds.
 */
export interface LiveRunFrame {
  stepId: string;
  /** What runs, in words (the step's one-line summary: a command's line, a snippet's language and purpose). */
  title: string;
  phase: RunPhase;
  startedAt: string;
  chunks: TailChunk[];
  replace: boolean;
  bytes: { stdout: number; stderr: number };
  cancelling: boolean;
  /** Set on the last frame of a run. */
  endedAt?: string;
}

/** Keeps only the last `LIVE_TAIL_BYTES` bytes and `LIVE_TAIL_LINES` lines of a run of chunks (in place). */
export function trimTail(chunks: TailChunk[]): TailChunk[] {
  let bytes = 0;
  let lines = 0;
  for (let index = chunks.length - 1; index >= 0; index--) {
    const chunk = chunks[index]!;
    const newlines = countNewlines(chunk.text);
    if (bytes + chunk.text.length <= LIVE_TAIL_BYTES && lines + newlines <= LIVE_TAIL_LINES) {
      bytes += chunk.text.length;
      lines += newlines;
      continue;
    }
    // This chunk is the oldest kept: cut its front to what still fits, at a line start when the line count is the bound.
    let text = chunk.text.slice(Math.max(0, chunk.text.length - (LIVE_TAIL_BYTES - bytes)));
    let over = lines + countNewlines(text) - LIVE_TAIL_LINES;
    while (over > 0) {
      text = text.slice(text.indexOf('\n') + 1);
      over--;
    }
    chunks.splice(0, index + 1, ...(text ? [{ stream: chunk.stream, text }] : []));
    return chunks;
  }
  return chunks;
}

function countNewlines(text: string): number {
  let count = 0;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) count++;
  return count;
}

/** Appends a chunk, joining it to the last one of the same stream (fewer, longer chunks on the wire). */
export function appendChunk(chunks: TailChunk[], chunk: TailChunk): void {
  const last = chunks.at(-1);
  if (last && last.stream === chunk.stream) last.text += chunk.text;
  else chunks.push({ ...chunk });
}

/** What an action's sandbox run is handed: where its output goes as it comes, and the signal that stops it. */
export interface RunHooks {
  signal: AbortSignal;
  onOutput(stream: OutputStream, chunk: Uint8Array): void;
}
