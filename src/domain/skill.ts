import { z } from 'zod';
import { sha256Hex } from './canonical-json.js';
import { ExecutorError } from './errors.js';
import { SKILL_STATES, type SkillState } from './skill-names.js';
import { normaliseCode } from './code-normal-form.js';

/**
 * A skill: an agent's repeated code made permanent. It moves through one pipeline
 * (docs/skills.md): draft → quarantine → validation → awaiting_owner → trial → active, and may end
 * rejected, disabled (with the reason) or superseded. A skill row is never changed in what it runs:
 * an edit or a new version is a new row with its own id, and approval pins the code hash and the
 * capabilities it was given for.
 */
export { SKILL_STATES, type SkillState };
export { normaliseCode };

/** The states in which a skill may be used: its code and capabilities are pinned by the person's approval. */
export const USABLE_SKILL_STATES: readonly SkillState[] = ['trial', 'active'];

const SKILL_TRANSITIONS: Record<SkillState, readonly SkillState[]> = {
  draft: ['quarantine', 'rejected'],
  // Back to draft: the stop switch cut its check short; the person checks it again (recheck).
  quarantine: ['validation', 'rejected', 'draft'],
  validation: ['awaiting_owner', 'rejected', 'draft'],
  awaiting_owner: ['trial', 'rejected', 'superseded'],
  trial: ['active', 'disabled', 'superseded'],
  active: ['disabled', 'superseded'],
  rejected: [],
  // A rollback re-activates an earlier version through the person: it goes back to trial, watched again.
  disabled: ['trial'],
  superseded: ['trial'],
};

export function assertSkillTransition(from: SkillState, to: SkillState): void {
  if (!SKILL_TRANSITIONS[from].includes(to))
    throw new ExecutorError('ILLEGAL_TRANSITION', `A skill cannot go from ${from} to ${to}.`, { from, to });
}

/** A skill's name is also an MCP tool's name (`skill_<name>`): letters, digits and "_" only. */
export const SkillNameSchema = z
  .string()
  .min(1, 'name is empty')
  .max(48, 'name is longer than 48 characters')
  .regex(
    /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/,
    // No "__": agents' clients join server and tool with it (mcp__executor__skill_x), so a name holding it could pose as another server's tool.
    'a skill name is lowercase letters and digits, words joined by single "_", starting with a letter',
  );

export const SkillCapabilitiesSchema = z.strictObject({
  fetch: z.strictObject({ hosts: z.array(z.string().min(1).max(253)).min(1).max(50) }).optional(),
  readFile: z.literal(true).optional(),
  kbSearch: z.literal(true).optional(),
});
export type SkillCapabilities = z.infer<typeof SkillCapabilitiesSchema>;

export const SkillBudgetSchema = z.strictObject({
  /** The time one use may take, in ms (the light sandbox's own range, 100–5000). */
  timeMs: z.number().int().min(100).max(5000),
  /** Tool calls one use may make. */
  calls: z.number().int().min(0).max(1000),
});
export type SkillBudget = z.infer<typeof SkillBudgetSchema>;

/** The JSON Schema keywords a skill's input and output schemas may use; anything else is refused by name. */
const SCHEMA_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'const',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'additionalProperties',
  'description',
  'title',
  '$schema',
]);
const SCHEMA_TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);

/** Where a schema leaves the accepted subset, as a JSON path and why; undefined when it stays inside. */
export function schemaOutsideSubset(schema: unknown, at = '$'): string | undefined {
  if (typeof schema === 'boolean') return undefined;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return `${at} is not a JSON Schema object`;
  const record = schema as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!SCHEMA_KEYWORDS.has(key))
      return `${at} uses "${key}", which skills do not accept (accepted: ${[...SCHEMA_KEYWORDS].filter((k) => k !== '$schema').join(', ')})`;
  }
  const types = Array.isArray(record.type) ? record.type : record.type === undefined ? [] : [record.type];
  for (const type of types)
    if (typeof type !== 'string' || !SCHEMA_TYPES.has(type)) return `${at}.type "${String(type)}" is not a JSON type`;
  if (record.properties !== undefined) {
    if (typeof record.properties !== 'object' || record.properties === null || Array.isArray(record.properties))
      return `${at}.properties is not an object`;
    for (const [name, sub] of Object.entries(record.properties)) {
      // The validator reads such a name through the prototype: "__proto__" took any value or none, "constructor" refused every input without it.
      if (name in Object.prototype)
        return `${at}.properties.${name}: a property may not be named like a built-in of every object (__proto__, constructor, toString, …)`;
      const found = schemaOutsideSubset(sub, `${at}.properties.${name}`);
      if (found) return found;
    }
  }
  if (record.items !== undefined) {
    const found = schemaOutsideSubset(record.items, `${at}.items`);
    if (found) return found;
  }
  if (record.additionalProperties !== undefined && typeof record.additionalProperties !== 'boolean') {
    const found = schemaOutsideSubset(record.additionalProperties, `${at}.additionalProperties`);
    if (found) return found;
  }
  if (record.required !== undefined && (!Array.isArray(record.required) || record.required.some((name) => typeof name !== 'string')))
    return `${at}.required is not a list of names`;
  if (record.enum !== undefined && !Array.isArray(record.enum)) return `${at}.enum is not a list`;
  return undefined;
}

const JsonSchemaField = (field: string) =>
  z.record(z.string(), z.unknown()).superRefine((schema, ctx) => {
    const outside = schemaOutsideSubset(schema);
    if (outside) {
      ctx.addIssue({ code: 'custom', message: `${field}: ${outside}` });
      return;
    }
    try {
      z.fromJSONSchema(schema as never);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `${field} cannot be read as a JSON Schema: ${(error as Error).message}` });
    }
  });

export const MAX_SKILL_EXAMPLES = 20;
export const MIN_SKILL_EXAMPLES = 3;

/** What an agent (or the person) proposes. The code reads its input as `input` and returns its output. */
export const SkillProposalSchema = z.strictObject({
  name: SkillNameSchema,
  purpose: z.string().min(1, 'say what the skill is for').max(2000),
  code: z
    .string()
    .min(1, 'code is empty')
    .max(50 * 1024, 'code is longer than the light sandbox takes (50 KiB)'),
  // An agent calls a skill as a tool, and a tool's arguments are an object.
  inputSchema: JsonSchemaField('inputSchema').refine((schema) => schema.type === 'object', {
    message: 'inputSchema: a skill takes an object (type "object"): agents call it as a tool with named arguments',
  }),
  outputSchema: JsonSchemaField('outputSchema'),
  capabilities: SkillCapabilitiesSchema.default({}),
  budget: SkillBudgetSchema.default({ timeMs: 2000, calls: 0 }),
  examples: z.array(z.unknown()).min(MIN_SKILL_EXAMPLES, `give at least ${MIN_SKILL_EXAMPLES} example inputs`).max(MAX_SKILL_EXAMPLES),
});
export type SkillProposal = z.output<typeof SkillProposalSchema>;
export type SkillProposalInput = z.input<typeof SkillProposalSchema>;

/** A person's edit: only what changes; the edit becomes a new skill that goes through quarantine again. */
export const SkillEditSchema = z.strictObject({
  code: SkillProposalSchema.shape.code.optional(),
  purpose: SkillProposalSchema.shape.purpose.optional(),
  inputSchema: JsonSchemaField('inputSchema').optional(),
  outputSchema: JsonSchemaField('outputSchema').optional(),
  capabilities: SkillCapabilitiesSchema.optional(),
  budget: SkillBudgetSchema.optional(),
  examples: SkillProposalSchema.shape.examples.optional(),
});

/** One example's run in quarantine (and what the person sees before approving). */
export const SkillExampleResultSchema = z.object({
  input: z.unknown(),
  ok: z.boolean(),
  /** The value it returned (when ok). */
  output: z.unknown().optional(),
  /** Why it failed: a sandbox failure code or SCHEMA_MISMATCH / BUDGET_EXCEEDED / UNDECLARED_CALL. */
  code: z.string().optional(),
  message: z.string().optional(),
  durationMs: z.number(),
  calls: z.array(z.object({ tool: z.string(), target: z.string(), decision: z.string(), reason: z.string().optional() })),
});
export type SkillExampleResult = z.infer<typeof SkillExampleResultSchema>;

export const SkillPinSchema = z.object({
  codeHash: z.string(),
  capabilitiesHash: z.string(),
  approvedAt: z.string(),
  approvedBy: z.string(),
});
export type SkillPin = z.infer<typeof SkillPinSchema>;

export const SkillRecordSchema = z.object({
  skillId: z.string(),
  name: z.string(),
  version: z.number().int(),
  purpose: z.string(),
  code: z.string(),
  codeHash: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  outputSchema: z.record(z.string(), z.unknown()),
  capabilities: SkillCapabilitiesSchema,
  budget: SkillBudgetSchema,
  examples: z.array(z.unknown()),
  exampleResults: z.array(SkillExampleResultSchema),
  state: z.enum(SKILL_STATES),
  /** Why it was rejected or disabled, or what superseded it. */
  reason: z.string().nullable(),
  /** Who proposed it: an agent identity, or the person's channel. */
  proposedBy: z.string(),
  /** The skill this one is an edit or a new version of. */
  parentId: z.string().nullable(),
  /** The step it was made from ("Save as skill"). */
  fromStepId: z.string().nullable(),
  pin: SkillPinSchema.nullable(),
  trial: z.object({ uses: z.number().int(), since: z.string().nullable(), required: z.number().int(), untilAt: z.string().nullable() }),
  /** Uses in a row that failed by a plain error (the code threw or crashed); policy skills.maxConsecutiveErrors of them disable an active skill. */
  errorsInRow: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type SkillRecord = z.infer<typeof SkillRecordSchema>;

/** A notice that the same code was approved several times: "seen N times: save as a skill?". */
export const RepetitionNoticeSchema = z.object({
  agent: z.string(),
  codeHash: z.string(),
  times: z.number().int(),
  /** The newest executed step with this code: "Save as skill" starts from it. */
  lastStepId: z.string(),
  purpose: z.string().nullable(),
  lastAt: z.string(),
  text: z.string(),
});
export type RepetitionNotice = z.infer<typeof RepetitionNoticeSchema>;

/** One use of a skill: its value (or why not), the code hash it ran under, and where its trial stands. */
export const SkillUseResultSchema = z.object({
  /** The use's runSkill step (and its plan of one): `executor steps show` and History find it by these. */
  stepId: z.string(),
  planId: z.string(),
  skillId: z.string(),
  name: z.string(),
  version: z.number().int(),
  codeHash: z.string(),
  ok: z.boolean(),
  output: z.unknown().optional(),
  code: z.string().optional(),
  message: z.string().optional(),
  logs: z.array(z.string()),
  durationMs: z.number(),
  /** The skill's state after this use. */
  state: z.enum(SKILL_STATES),
  /** Why this use disabled the skill, when it did. */
  reason: z.string().optional(),
});
export type SkillUseResult = z.infer<typeof SkillUseResultSchema>;

/** The hash approval pins: of the exact code text, so any change, even whitespace, is a different skill. */
export function skillCodeHash(code: string): string {
  return sha256Hex(code);
}

/** Capabilities by content: the order hosts are listed in does not matter, anything more does. */
export function skillCapabilitiesHash(capabilities: SkillCapabilities, budget: SkillBudget): string {
  const hosts = capabilities.fetch ? [...capabilities.fetch.hosts].map((host) => host.toLowerCase()).sort() : null;
  return sha256Hex(
    JSON.stringify({ fetch: hosts, readFile: capabilities.readFile === true, kbSearch: capabilities.kbSearch === true, budget }),
  );
}

/** The `skill` event: which skill changed, to what, and what the person is told (a disabled skill's reason). */
export const SkillEventSchema = z.object({
  skillId: z.string(),
  name: z.string(),
  version: z.number().int(),
  state: z.enum(SKILL_STATES),
  notice: z.string().nullable(),
});
export type SkillEvent = z.infer<typeof SkillEventSchema>;
