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
const DoneOkFrame = z.strictObject({ t: z.literal('done'), ok: z.literal(true), json: z.string(), tooLarge: z.boolean(), ...common });
const DoneErrorFrame = z.strictObject({
  t: z.literal('done'),
  ok: z.literal(false),
  error: z.strictObject({ name: z.string(), message: z.string() }),
  ...common,
});

export const WorkerFrameSchema = z.union([ReadyFrame, CallFrame, DoneOkFrame, DoneErrorFrame]);
export type WorkerFrame = z.infer<typeof WorkerFrameSchema>;
export type CallFrame = z.infer<typeof CallFrame>;
export type DoneFrame = z.infer<typeof DoneOkFrame> | z.infer<typeof DoneErrorFrame>;

export function parseWorkerFrame(message: unknown): WorkerFrame | undefined {
  const parsed = WorkerFrameSchema.safeParse(message);
  return parsed.success ? parsed.data : undefined;
}

/** What the host sends: the one run, and replies to tool calls. */
export type HostFrame =
  | { t: 'run'; code: string; tools: string[]; limits: { maxResultBytes: number; maxLogBytes: number; maxToolArgsBytes: number } }
  | { t: 'reply'; id: number; ok: true; value: unknown }
  | { t: 'reply'; id: number; ok: false; error: string };
