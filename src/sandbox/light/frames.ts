import { z } from 'zod';

/**
 * Everything a worker may say. A worker is hostile by assumption: every frame is parsed against
 * these schemas, and anything else ends the run.
 */
const ReadyFrame = z.strictObject({ t: z.literal('ready') });
const CallFrame = z.strictObject({
  t: z.literal('call'),
  id: z.number().int().positive(),
  tool: z.string().max(100),
  args: z.array(z.unknown()).max(16),
});
const common = { logs: z.array(z.string()).max(10_000), logsTruncated: z.boolean() };
const DoneOkFrame = z.strictObject({
  t: z.literal('done'),
  ok: z.literal(true),
  json: z.string(),
  tooLarge: z.boolean(),
  /** Containers nested past limits.maxValueDepth were replaced by a marker while the value was turned into JSON. */
  valueTruncated: z.boolean().optional(),
  ...common,
});
const DoneErrorFrame = z.strictObject({
  t: z.literal('done'),
  ok: z.literal(false),
  error: z.strictObject({ name: z.string(), message: z.string() }),
  ...common,
});

export const WorkerFrameSchema = z.union([ReadyFrame, CallFrame, DoneOkFrame, DoneErrorFrame]);
export type WorkerFrame = z.infer<typeof WorkerFrameSchema>;
type CallFrame = z.infer<typeof CallFrame>;
export type DoneFrame = z.infer<typeof DoneOkFrame> | z.infer<typeof DoneErrorFrame>;

export function parseWorkerFrame(message: unknown): WorkerFrame | undefined {
  const parsed = WorkerFrameSchema.safeParse(message);
  return parsed.success ? parsed.data : undefined;
}

/** What the host sends: the one run, and replies to tool calls. */
export type HostFrame =
  | {
      t: 'run';
      code: string;
      tools: string[];
      /** A skill's input as JSON text, read by the worker's own JSON.parse and handed to the code as `input`. */
      inputJson?: string;
      limits: { maxResultBytes: number; maxLogBytes: number; maxToolArgsBytes: number; maxValueDepth: number };
    }
  | { t: 'reply'; id: number; ok: true; value: unknown }
  | { t: 'reply'; id: number; ok: false; error: string };

/** Worker frames are single JSON lines; a legitimate one (32 KB value + 32 KB logs, escaped) stays far below this. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/** What the decoder hands on for a line that is not a frame: the runner treats it as a protocol violation. */
export interface MalformedFrame {
  malformed: string;
}

/**
 * Splits the worker's byte stream into JSON lines without trusting it: a line that does not parse,
 * or one that grows past the cap, becomes a MalformedFrame instead of an exception in the host
 * (Node's own IPC channel throws an uncaught error in the parent on a malformed line).
 */
export class FrameDecoder {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private broken = false;

  push(chunk: Buffer): unknown[] {
    if (this.broken) return [];
    const frames: unknown[] = [];
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, newline);
      start = newline + 1;
      if (this.pendingBytes + piece.length > MAX_FRAME_BYTES) return this.overflow(frames);
      const line = Buffer.concat([...this.pending, piece]).toString('utf8');
      this.pending = [];
      this.pendingBytes = 0;
      try {
        frames.push(JSON.parse(line));
      } catch {
        frames.push({ malformed: 'a line that is not JSON' } satisfies MalformedFrame);
      }
    }
    const rest = chunk.subarray(start);
    if (rest.length) {
      if (this.pendingBytes + rest.length > MAX_FRAME_BYTES) return this.overflow(frames);
      this.pending.push(Buffer.from(rest));
      this.pendingBytes += rest.length;
    }
    return frames;
  }

  private overflow(frames: unknown[]): unknown[] {
    this.broken = true;
    this.pending = [];
    this.pendingBytes = 0;
    return [...frames, { malformed: `a frame larger than ${MAX_FRAME_BYTES} bytes` } satisfies MalformedFrame];
  }
}

/**
 * One frame that arrived as one message (an Electron utility process's parentPort carries JSON
 * text, one frame per message): the same caps and the same `{ malformed }` as a line on fd 3.
 */
export function decodeFrameMessage(data: unknown): unknown {
  if (typeof data !== 'string') return { malformed: 'a message that is not JSON text' } satisfies MalformedFrame;
  if (Buffer.byteLength(data, 'utf8') > MAX_FRAME_BYTES)
    return { malformed: `a frame larger than ${MAX_FRAME_BYTES} bytes` } satisfies MalformedFrame;
  try {
    return JSON.parse(data);
  } catch {
    return { malformed: 'a line that is not JSON' } satisfies MalformedFrame;
  }
}
