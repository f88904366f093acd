import { z } from 'zod';
import { canonicalJson, sha256Hex } from './canonical-json.js';
import { wellFormed } from './json-limits.js';
import { DIGEST_KEPT_FROM_CHARS, textDigest } from './text-digest.js';
import { SkillNameSchema } from './skill.js';
import { MAX_CONTENT_BYTES } from './step-limits.js';
import { trimPlainSpace } from './visible-text.js';

export { MAX_CONTENT_BYTES };
export const MAX_STEPS_PER_PLAN = 500;

const boundedText = (field: string, maxBytes: number) =>
  z.string().refine((text) => Buffer.byteLength(text, 'utf8') <= maxBytes, {
    message: `${field} is larger than ${Math.round(maxBytes / 1024 / 1024)} MiB`,
  });

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Standard base64 in its canonical form, nothing else: padded with "=" to a multiple of 4, and the
 * bits the padding leaves over in the last character zero. Any other text would decode too (Node
 * skips what it cannot read and ignores leftover bits: "aGVsbG9=" and "aGVsbG8=" both give
 * "hello"), so two different texts would write the same bytes. This holds exactly when re-encoding
 * the decoded bytes gives back the same text, checked here without decoding 16 MiB again.
 */
export function isStrictBase64(text: string): boolean {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return false;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  if (padding === 0) return true;
  // The last data character carries 4 (one "=") or 2 (two "=") leftover bits in its low end.
  const last = BASE64_ALPHABET.indexOf(text[text.length - 1 - padding]!);
  return (last & (padding === 2 ? 0b1111 : 0b11)) === 0;
}

const pathField = z.string().min(1, 'path is empty').max(4096, 'path is longer than 4096 characters');

/**
 * Argument schemas of every action. Adding an action = one entry here (the schema union)
 * plus its module under src/actions/ and its registry line.
 */
export const ACTION_ARGS = {
  writeFile: z
    .strictObject({
      path: pathField,
      content: boundedText('content', MAX_CONTENT_BYTES),
      encoding: z.enum(['utf8', 'base64']).optional(),
    })
    // Node decodes bad base64 by skipping what it cannot read, so the file would silently differ from what was sent.
    .refine((args) => args.encoding !== 'base64' || isStrictBase64(args.content), {
      message:
        'content is not valid base64 (only A–Z, a–z, 0–9, "+", "/", padded with "=" to a multiple of 4 characters, in the canonical form: the text a base64 encoder writes for the bytes, e.g. "aGVsbG8=", not "aGVsbG9=")',
      path: ['content'],
    }),
  deleteFile: z.strictObject({
    path: pathField,
  }),
  runCommand: z
    .strictObject({
      /** Runs directly, no shell. */
      argv: z
        .array(z.string().max(64 * 1024))
        .min(1, 'argv is empty')
        .max(4096)
        .optional(),
      /** Runs under `sh -c` inside the container only. */
      command: z
        .string()
        .min(1, 'command is empty')
        .max(64 * 1024)
        .optional(),
      /** Directory inside a workspace root the command works in; only this subtree is copied into the container. */
      cwd: pathField.optional(),
      timeoutMs: z
        .number()
        .int()
        .min(100)
        .max(24 * 3600 * 1000)
        .optional(),
      network: z.enum(['none', 'allowlist']).optional(),
      env: z
        .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'env names are letters, digits and "_"'), z.string().max(32 * 1024))
        .optional(),
      /** Secret-looking files (relative to cwd) the person lets this command see; all others stay out of the copy. */
      allowSecrets: z.array(pathField).max(100).optional(),
    })
    .refine((args) => (args.argv === undefined) !== (args.command === undefined), { message: 'give exactly one of argv or command' }),
  createKBEntry: z.strictObject({
    title: z.string().overwrite(trimPlainSpace).min(1, 'title is empty').max(500),
    content: boundedText('content', 1024 * 1024),
    tags: z.array(z.string().min(1).max(100)).max(50).optional(),
  }),
  openURL: z.strictObject({
    url: z.string().min(1, 'url is empty').max(8192, 'url is longer than 8192 characters'),
    purpose: z.string().overwrite(trimPlainSpace).min(1, 'say why the page should open').max(2000),
  }),
  runCode: z.strictObject({
    /** Sizes over the sandbox's own limit are refused by the sandbox with a typed result, not by the plan parser. */
    code: boundedText('code', 1024 * 1024),
    purpose: z.string().max(2000).optional(),
    /** Clamped to the sandbox's range rather than rejected. */
    timeoutMs: z.number().finite().optional(),
    capabilities: z
      .strictObject({
        fetch: z.strictObject({ hosts: z.array(z.string().min(1).max(253)).min(1).max(50) }).optional(),
        readFile: z.literal(true).optional(),
        kbSearch: z.literal(true).optional(),
      })
      .optional(),
    language: z.enum(['javascript', 'python']).optional(),
    sandbox: z.enum(['light', 'docker']).optional(),
  }),
  /**
   * One use of an approved skill (docs/skills.md): written by the skills room only, never proposed in a
   * plan. Its args name the exact version and code hash it runs under, so the step's hash binds them.
   */
  runSkill: z.strictObject({
    skill: SkillNameSchema,
    skillId: z.string().min(1).max(128),
    version: z.number().int().min(1),
    // As stored on the skill: a tampered row's hash is recorded as it is (its use is refused), so any text is taken.
    codeHash: z.string().min(1).max(128),
    input: z.unknown(),
  }),
} as const;

export type ActionName = keyof typeof ACTION_ARGS;
export type ActionArgs<A extends ActionName> = z.infer<(typeof ACTION_ARGS)[A]>;

export const StepMetaSchema = z.strictObject({
  origin: z.enum(['user', 'agent']),
  purpose: z.string().max(2000).optional(),
  modelVersion: z.string().max(200).optional(),
  confidence: z.number().min(0).max(1).optional(),
  /** Who proposed it, e.g. an MCP client's name and version: what the agent says about itself, a label only. */
  client: z.string().max(200).optional(),
  /** The agent identity the host issued to the proposing session: the only thing "an agent's own step" is decided by. */
  agent: z.string().max(128).optional(),
});
export type StepMeta = z.infer<typeof StepMetaSchema>;

const idField = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'ids may hold letters, digits, ".", "_", ":" and "-" only');

const stepVariant = <A extends ActionName>(action: A) =>
  z.strictObject({
    id: idField,
    planId: idField,
    action: z.literal(action),
    args: ACTION_ARGS[action],
    meta: StepMetaSchema,
  });

export const StepSchema = z.discriminatedUnion('action', [
  stepVariant('writeFile'),
  stepVariant('deleteFile'),
  stepVariant('createKBEntry'),
  stepVariant('runCommand'),
  stepVariant('openURL'),
  stepVariant('runCode'),
  stepVariant('runSkill'),
]);
export type Step = z.infer<typeof StepSchema>;
/** The step of one action, its args typed. */
export type StepOf<A extends ActionName> = Extract<Step, { action: A }>;

/**
 * A plan's own consent expiry, in seconds: the proposer may ask that its steps stop waiting sooner
 * than the policy's consentExpirySeconds (never later: the shorter of the two holds).
 */
const consentExpiryField = z
  .number()
  .int('consentExpirySeconds is a whole number of seconds')
  .min(1, 'consentExpirySeconds is at least 1')
  .max(366 * 24 * 3600, 'consentExpirySeconds is at most a year');

export const PlanSchema = z.strictObject({
  planId: idField,
  purpose: z.string().max(2000).optional(),
  consentExpirySeconds: consentExpiryField.optional(),
  steps: z.array(StepSchema).min(1, 'a plan needs at least one step').max(MAX_STEPS_PER_PLAN),
});
export type Plan = z.infer<typeof PlanSchema>;

/**
 * What a person or agent writes: ids and planId may be left out and are filled in;
 * meta defaults to the proposer's origin.
 */
export const PlanInputSchema = z.strictObject({
  planId: idField.optional(),
  purpose: z.string().max(2000).optional(),
  consentExpirySeconds: consentExpiryField.optional(),
  steps: z
    .array(
      z.looseObject({
        id: idField.optional(),
        action: z.string(),
        args: z.unknown(),
        meta: StepMetaSchema.partial().optional(),
      }),
    )
    .min(1, 'a plan needs at least one step')
    .max(MAX_STEPS_PER_PLAN),
});

const stepHashes = new WeakMap<Step, string>();

/**
 * What the step's hash is taken over. A long write's content is bound by its sha256 (of its UTF-8), under a key no
 * step's own form has (`contentSha256` beside id, plan, action, args and meta): canonicalizing 10 MB of text only to
 * hash it cost more than hashing it, and the same digest names its blob and its audit summary (text-digest.ts), so it
 * is computed once. Only a well-formed text: its UTF-8 is then one-to-one with it (a lone surrogate would become
 * U+FFFD, and two different texts one digest), and a text that is not keeps the whole form.
 */
function hashedForm(step: Step): unknown {
  const whole = { id: step.id, planId: step.planId, action: step.action, args: step.args, meta: step.meta };
  if (step.action !== 'writeFile' || step.args.content.length < DIGEST_KEPT_FROM_CHARS || !wellFormed(step.args.content)) return whole;
  const { content, ...args } = step.args;
  return { ...whole, args, contentSha256: textDigest(content).sha256 };
}

/**
 * The hash consent binds to: any change to id, plan, action, args or meta changes it. Memoized per
 * step object (steps are never mutated).
 */
export function stepHash(step: Step): string {
  let hash = stepHashes.get(step);
  if (hash === undefined) {
    hash = sha256Hex(canonicalJson(hashedForm(step)));
    stepHashes.set(step, hash);
  }
  return hash;
}

/**
 * Whether `hash` is this step's: its hash now, or the hash a long write had before its content was bound by digest
 * (the whole content made canonical), which approvals given before that change name. Both bind the same step.
 */
export function stepHashHolds(step: Step, hash: string): boolean {
  if (stepHash(step) === hash) return true;
  if (step.action !== 'writeFile' || step.args.content.length < DIGEST_KEPT_FROM_CHARS) return false;
  return sha256Hex(canonicalJson({ id: step.id, planId: step.planId, action: step.action, args: step.args, meta: step.meta })) === hash;
}
