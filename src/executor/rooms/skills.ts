import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Actor } from '../../domain/actor.js';
import type { CapabilityCallSummary, CodeRunResult } from '../../domain/code-run.js';
import { ExecutorError } from '../../domain/errors.js';
import { hostPausedError } from '../../domain/host-pause.js';
import {
  assertSkillTransition,
  normaliseCode,
  skillCapabilitiesHash,
  skillCodeHash,
  SkillEditSchema,
  SkillProposalSchema,
  USABLE_SKILL_STATES,
  type RepetitionNotice,
  type SkillCapabilities,
  type SkillExampleResult,
  type SkillProposal,
  type SkillRecord,
  type SkillState,
  type SkillUseResult,
} from '../../domain/skill.js';
import { sha256Hex } from '../../domain/canonical-json.js';
import { describeIssues } from '../../domain/plan-parse.js';
import { MAX_TOOL_ARGS_BYTES } from '../../sandbox/light/limits.js';
import { blockedPattern } from '../../sandbox/light/static-guard.js';
import { ToolBridge, type BridgeMode } from '../../sandbox/light/tool-bridge.js';
import { hostAllowed, TOOL_REGISTRY } from '../../sandbox/light/tool-registry.js';
import { SYSTEM_ACTOR, type StepDesk } from '../step-desk.js';

/** Who a skill is proposed by, as its record says: the agent's issued identity, or the person's channel. */
function proposerName(actor: Actor): string {
  if (actor.agent) return `agent:${actor.agent}`;
  // An agent run speaks as "run <id>" on the mcp channel, with no issued identity (src/runs/run-ids.ts).
  if (actor.channel === 'mcp' && actor.client) return actor.client;
  return `${actor.channel}:${actor.user}`;
}

/** One example's or one use's outcome, classified: which gate it fails, if any. */
interface ClassifiedRun {
  result: SkillExampleResult;
  /** quarantine: crash, timeout, error, budget, schema; validation: a call beyond what it declared; sandbox: it could not run now. */
  failsAt: 'quarantine' | 'validation' | 'sandbox' | null;
}

/** Why a call the broker recorded lies outside what the skill declared, or null when it lies inside. */
function undeclaredBecause(call: CapabilityCallSummary, declared: SkillCapabilities): string | null {
  const tool = TOOL_REGISTRY.find((candidate) => candidate.name === call.tool);
  if (!tool) return `tools.${call.tool} is no tool`;
  if (declared[tool.capability] === undefined) return `it did not declare the ${tool.capability} capability`;
  if (tool.capability === 'fetch') {
    let host: string;
    try {
      host = new URL(call.target.slice(call.target.indexOf(' ') + 1)).hostname;
    } catch {
      return 'the request has no readable URL';
    }
    if (!hostAllowed(host, declared.fetch?.hosts ?? [])) return `${host} is not among the hosts it declared`;
  }
  return null;
}

/** Compiled once per schema text: a skill's schemas never change, and compiling them costs more than a small skill's run. */
const validators = new Map<string, z.ZodType>();
function validatorFor(schema: Record<string, unknown>): z.ZodType {
  const key = JSON.stringify(schema);
  let validator = validators.get(key);
  if (!validator) {
    if (validators.size > 500) validators.clear();
    validator = z.fromJSONSchema(schema as never);
    validators.set(key, validator);
  }
  return validator;
}

function firstIssue(schema: z.ZodType, value: unknown): string | null {
  const parsed = schema.safeParse(value);
  return parsed.success ? null : describeIssues(parsed.error).join('; ');
}

/**
 * Skills (docs/skills.md): an agent's repeated code made permanent. A proposal is stored as a draft
 * and goes through quarantine (each example in the light sandbox with its budget; no crash, timeout,
 * overrun or output outside its schema) and validation (the static guard, and the broker's own
 * records of what the code called against what it declared), then waits for the person. Approval pins
 * the code hash and capabilities; a trial watches the first uses and disables the skill at the first
 * misstep; after it the skill is active and runs without asking, each use a LOW `skill.used` record
 * under its code hash. Each state change is one transaction with its skill.* record.
 */
export class SkillsRoom {
  constructor(private readonly desk: StepDesk) {}

  private now(): string {
    return new Date(this.desk.skillClock()).toISOString();
  }

  /**
   * A skill's new state and its `skill.state` record, written together (the caller holds the
   * transaction). `stateReason` is what the skill row keeps; `detail` adds to the record's fields.
   */
  private saveState(
    skill: SkillRecord,
    from: SkillState,
    to: SkillState,
    stateReason: string | null,
    actor: Actor,
    now: string,
    detail: Record<string, unknown>,
  ): void {
    this.desk.skills.setState(skill.skillId, to, stateReason, now);
    this.desk.audit.append({
      kind: 'skill.state',
      actor,
      detail: { skillId: skill.skillId, name: skill.name, version: skill.version, from, to, codeHash: skill.codeHash, ...detail },
    });
  }

  /** Approving, or rolling back to, a version: the others of its name superseded, the pin kept, its trial begun. */
  private startTrial(
    skill: SkillRecord,
    pin: NonNullable<SkillRecord['pin']>,
    actor: Actor,
    now: string,
    detail: Record<string, unknown>,
  ): void {
    this.desk.db.transaction(() => {
      this.supersedeOthers(skill, actor, now);
      this.desk.skills.pin(skill.skillId, pin, now);
      this.saveState(skill, skill.state, 'trial', null, actor, now, detail);
    })();
  }

  list(states?: readonly SkillState[]): SkillRecord[] {
    return this.desk.skills.list(states);
  }

  get(skillId: string): SkillRecord {
    const skill = this.desk.skills.get(skillId);
    if (!skill)
      throw new ExecutorError('SKILL_NOT_FOUND', `There is no skill ${skillId.slice(0, 128)}. \`executor skills list\` shows them.`);
    return skill;
  }

  /** The skills an agent may use now (trial or active), one per name: what the MCP server and runs offer as tools. */
  usable(): SkillRecord[] {
    return this.desk.paused ? [] : this.desk.skills.list(USABLE_SKILL_STATES);
  }

  /** A state change and its record in one transaction; the skill event follows it. */
  private transition(skill: SkillRecord, to: SkillState, actor: Actor, reason: string | null, detail: Record<string, unknown> = {}) {
    const now = this.now();
    this.desk.db.transaction(() => {
      const current = this.get(skill.skillId);
      assertSkillTransition(current.state, to);
      this.saveState(skill, current.state, to, reason, actor, now, { reason, ...detail });
    })();
    const notice = to === 'disabled' || to === 'rejected' ? `Skill ${skill.name} v${skill.version} was ${to}: ${reason}` : null;
    this.desk.events.emit('skill', { skillId: skill.skillId, name: skill.name, version: skill.version, state: to, notice });
    return this.get(skill.skillId);
  }

  /** An agent's or the person's proposal: stored as a draft, then quarantined and validated before it answers. */
  async propose(input: unknown, actor: Actor, origin: { parentId?: string; fromStepId?: string } = {}): Promise<SkillRecord> {
    if (this.desk.paused) throw hostPausedError(this.desk.paused, 'no skill can be proposed');
    const parsed = SkillProposalSchema.safeParse(input);
    if (!parsed.success) throw new ExecutorError('INVALID_INPUT', `The skill is not valid: ${describeIssues(parsed.error).join('; ')}`);
    const proposal = parsed.data;
    const tooBig = proposal.examples.find((example) => Buffer.byteLength(JSON.stringify(example) ?? 'null', 'utf8') > MAX_TOOL_ARGS_BYTES);
    if (tooBig !== undefined)
      throw new ExecutorError('INVALID_INPUT', `An example input is larger than ${MAX_TOOL_ARGS_BYTES} bytes as JSON.`);
    const skillId = `skill_${randomUUID()}`;
    const codeHash = skillCodeHash(proposal.code);
    const now = this.now();
    this.desk.db.transaction(() => {
      const version = this.desk.skills.nextVersion(proposal.name);
      this.desk.skills.insert({
        skillId,
        proposal,
        codeHash,
        version,
        proposedBy: proposerName(actor),
        parentId: origin.parentId ?? null,
        fromStepId: origin.fromStepId ?? null,
        now,
      });
      this.desk.audit.append({
        kind: 'skill.proposed',
        actor,
        detail: {
          skillId,
          name: proposal.name,
          version,
          codeHash,
          purpose: proposal.purpose,
          capabilities: proposal.capabilities,
          budget: proposal.budget,
          parentId: origin.parentId ?? null,
          fromStepId: origin.fromStepId ?? null,
        },
      });
    })();
    return this.check(this.get(skillId));
  }

  /** Quarantine, then validation; answers the skill as it ends (awaiting_owner or rejected). */
  private async check(draft: SkillRecord): Promise<SkillRecord> {
    let skill = this.transition(draft, 'quarantine', SYSTEM_ACTOR, null);
    // An example the skill would never be given proves nothing about it.
    const inputValidator = validatorFor(skill.inputSchema);
    for (const [i, example] of skill.examples.entries()) {
      const issue = firstIssue(inputValidator, example);
      if (issue)
        return this.transition(skill, 'rejected', SYSTEM_ACTOR, `quarantine: example ${i + 1} is outside the input schema: ${issue}`);
    }
    const runs: ClassifiedRun[] = [];
    for (const example of skill.examples) runs.push(await this.runOnce(skill, example, 'record-only', { kind: 'quarantine' }));
    this.desk.db.transaction(() => {
      this.desk.skills.setExampleResults(
        skill.skillId,
        runs.map((run) => run.result),
        this.now(),
      );
    })();
    // An example the sandbox could not run proves nothing: the skill cannot pass on it (propose it again later).
    const quarantineFailure = runs.findIndex((run) => run.failsAt === 'quarantine' || run.failsAt === 'sandbox');
    if (quarantineFailure !== -1) {
      const failed = runs[quarantineFailure]!.result;
      return this.transition(
        skill,
        'rejected',
        SYSTEM_ACTOR,
        `quarantine: example ${quarantineFailure + 1} failed (${failed.code}): ${failed.message}`,
      );
    }
    skill = this.transition(skill, 'validation', SYSTEM_ACTOR, null, { examples: runs.length });
    const pattern = blockedPattern(skill.code);
    if (pattern)
      return this.transition(
        skill,
        'rejected',
        SYSTEM_ACTOR,
        `validation: the static guard refuses "${pattern}" (isolated code cannot reach outside the sandbox)`,
      );
    const beyond = runs.findIndex((run) => run.failsAt === 'validation');
    if (beyond !== -1) {
      const failed = runs[beyond]!.result;
      return this.transition(skill, 'rejected', SYSTEM_ACTOR, `validation: example ${beyond + 1} ${failed.message}`);
    }
    const calls = runs.flatMap((run) => run.result.calls);
    return this.transition(skill, 'awaiting_owner', SYSTEM_ACTOR, null, {
      capabilityAudit: { calls: calls.length, tools: [...new Set(calls.map((call) => call.tool))] },
    });
  }

  /**
   * One run of the skill's code on one input, in the light sandbox with its declared capabilities
   * and budget, classified against its output schema and the broker's record of its calls. In
   * quarantine the network is recorded, never sent (`record-only`): nothing leaves the machine
   * before the person approves.
   */
  private async runOnce(
    skill: SkillRecord,
    input: unknown,
    mode: BridgeMode,
    context: { kind: 'quarantine' } | { kind: 'use'; useId: string },
  ): Promise<ClassifiedRun & { raw: CodeRunResult }> {
    const { desk } = this;
    const inFlight = new AbortController();
    const bridge = new ToolBridge({
      registry: TOOL_REGISTRY,
      mode,
      // One more than the budget is let through to the broker (and refused there), so an overrun is seen, not guessed.
      maxCalls: skill.budget.calls,
      audit: (detail) =>
        desk.db.transaction(() =>
          desk.audit.append({
            kind: 'capability.call',
            actor: SYSTEM_ACTOR,
            detail: {
              ...detail,
              skillId: skill.skillId,
              codeHash: skill.codeHash,
              ...(context.kind === 'use' ? { useId: context.useId } : { phase: 'quarantine' }),
            },
          }),
        )(),
      env: {
        policy: desk.policy,
        dataDir: desk.dataDir,
        grants: skill.capabilities,
        kbSearch: (query, limit) => desk.kb.search(query, limit),
        signal: inFlight.signal,
      },
    });
    let raw: CodeRunResult;
    try {
      raw = await desk.lightSandbox.run({ code: skill.code, timeoutMs: skill.budget.timeMs, bridge, input }, desk.policy.lightSandbox);
    } finally {
      inFlight.abort();
    }
    const calls = raw.capabilityCalls ?? [];
    const base = { input, durationMs: raw.durationMs, calls };
    const fail = (
      failsAt: NonNullable<ClassifiedRun['failsAt']>,
      code: string,
      message: string,
    ): ClassifiedRun & { raw: CodeRunResult } => ({
      raw,
      failsAt,
      result: { ...base, ok: false, code, message },
    });
    // The broker's own record of each call, held against what the skill declared: whatever else the broker said.
    const undeclared = calls.map((call) => ({ call, why: undeclaredBecause(call, skill.capabilities) })).find((found) => found.why);
    if (undeclared)
      return fail(
        'validation',
        'UNDECLARED_CALL',
        `called tools.${undeclared.call.tool} (${undeclared.call.target || 'no target'}) beyond what it declared: ${undeclared.why}`,
      );
    if (calls.length > skill.budget.calls)
      return fail('quarantine', 'BUDGET_EXCEEDED', `made ${calls.length} tool calls; its budget is ${skill.budget.calls} per use`);
    const refused = calls.find((call) => call.decision === 'denied');
    if (refused)
      return fail(
        'validation',
        'UNDECLARED_CALL',
        `called tools.${refused.tool} (${refused.target || 'no target'}), which the broker refused: ${refused.reason}`,
      );
    if (!raw.ok) {
      // Quarantine sends nothing: code that stopped at its first (recorded) request did what it could.
      if (mode === 'record-only' && raw.code === 'EXECUTION_ERROR' && calls.some((call) => call.decision === 'recorded'))
        return {
          raw,
          failsAt: null,
          result: {
            ...base,
            ok: true,
            code: 'NETWORK_RECORDED',
            message: 'stopped at a network request, which quarantine records and does not send',
          },
        };
      if (raw.code === 'EXECUTION_BLOCKED') return fail('validation', raw.code, raw.message);
      // The sandbox could not run it now (its energy budget, no sandbox, the person's Cancel): not the skill's misstep.
      if (raw.code === 'EXECUTION_DENIED' || raw.code === 'SANDBOX_UNAVAILABLE' || raw.code === 'EXECUTION_CANCELLED')
        return fail('sandbox', raw.code, raw.message);
      if (raw.code === 'EXECUTION_TIMEOUT')
        return fail('quarantine', 'BUDGET_EXCEEDED', `took longer than its time budget of ${skill.budget.timeMs} ms and was killed`);
      return fail('quarantine', raw.code, raw.message);
    }
    const mismatch = firstIssue(validatorFor(skill.outputSchema), raw.value);
    if (mismatch) return fail('quarantine', 'SCHEMA_MISMATCH', `returned a value outside its output schema: ${mismatch}`);
    return { raw, failsAt: null, result: { ...base, ok: true, output: raw.value } };
  }

  /** The person's approval: pins the code hash and capabilities it was given for, and starts the trial. */
  approve(skillId: string, actor: Actor, expected?: { codeHash?: string }): SkillRecord {
    const skill = this.get(skillId);
    if (skill.state !== 'awaiting_owner')
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Skill ${skill.name} v${skill.version} is ${skill.state}; only a skill awaiting its owner can be approved.`,
      );
    if (expected?.codeHash !== undefined && expected.codeHash !== skill.codeHash)
      throw new ExecutorError(
        'SKILL_PIN_MISMATCH',
        `The code of ${skill.name} v${skill.version} is not the code you saw (hash ${skill.codeHash}).`,
      );
    if (skillCodeHash(skill.code) !== skill.codeHash)
      throw new ExecutorError(
        'SKILL_PIN_MISMATCH',
        `The stored code of ${skill.name} v${skill.version} does not match its hash; it cannot be approved.`,
      );
    const limit = this.desk.policy.skills.maxActive;
    const usable = this.desk.skills.list(USABLE_SKILL_STATES).filter((other) => other.name !== skill.name);
    if (usable.length >= limit)
      throw new ExecutorError(
        'SKILL_LIMIT',
        `At most ${limit} skills may be usable at once (policy skills.maxActive); ${usable.map((other) => other.name).join(', ')} are. Disable one first.`,
      );
    const now = this.now();
    const pin = {
      codeHash: skill.codeHash,
      capabilitiesHash: skillCapabilitiesHash(skill.capabilities, skill.budget),
      approvedAt: now,
      approvedBy: proposerName(actor),
    };
    this.startTrial(skill, pin, actor, now, { pin });
    this.desk.events.emit('skill', { skillId: skill.skillId, name: skill.name, version: skill.version, state: 'trial', notice: null });
    return this.get(skill.skillId);
  }

  /** One version of a name is usable at a time: approving (or rolling back to) one supersedes the others. */
  private supersedeOthers(skill: SkillRecord, actor: Actor, now: string): void {
    for (const other of this.desk.skills.list(['awaiting_owner', 'trial', 'active'])) {
      if (other.name !== skill.name || other.skillId === skill.skillId) continue;
      this.saveState(other, other.state, 'superseded', `superseded by v${skill.version}`, actor, now, { by: skill.skillId });
    }
  }

  reject(skillId: string, actor: Actor, reason: string): SkillRecord {
    const said = reason.trim();
    if (!said) throw new ExecutorError('INVALID_INPUT', 'Say why the skill is rejected (--reason).');
    return this.transition(this.get(skillId), 'rejected', actor, said.slice(0, 2000));
  }

  disable(skillId: string, actor: Actor, reason: string): SkillRecord {
    const skill = this.get(skillId);
    if (skill.state === 'disabled') return skill;
    return this.transition(skill, 'disabled', actor, reason.trim().slice(0, 2000) || 'disabled by the person');
  }

  /** The person's edit: a new skill (new row, new version) that goes through quarantine again; the old one stays as it was. */
  async edit(skillId: string, actor: Actor, change: unknown): Promise<SkillRecord> {
    const skill = this.get(skillId);
    const parsed = SkillEditSchema.safeParse(change);
    if (!parsed.success) throw new ExecutorError('INVALID_INPUT', `The edit is not valid: ${describeIssues(parsed.error).join('; ')}`);
    const proposal: SkillProposal = {
      name: skill.name,
      purpose: parsed.data.purpose ?? skill.purpose,
      code: parsed.data.code ?? skill.code,
      inputSchema: parsed.data.inputSchema ?? skill.inputSchema,
      outputSchema: parsed.data.outputSchema ?? skill.outputSchema,
      capabilities: parsed.data.capabilities ?? skill.capabilities,
      budget: parsed.data.budget ?? skill.budget,
      examples: parsed.data.examples ?? skill.examples,
    };
    const edited = await this.propose(proposal, actor, { parentId: skill.skillId });
    // An edit of a skill still waiting for its owner replaces it: the person decides on the new one.
    if (this.get(skill.skillId).state === 'awaiting_owner')
      this.transition(skill, 'rejected', actor, `replaced by the edit v${edited.version}`);
    return edited;
  }

  /** Back to an earlier version, through the person: it is checked against its pin and watched in a new trial. */
  rollback(skillId: string, actor: Actor): SkillRecord {
    const skill = this.get(skillId);
    if (skill.state !== 'superseded' && skill.state !== 'disabled')
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Skill ${skill.name} v${skill.version} is ${skill.state}; only a superseded or disabled version can be rolled back to.`,
      );
    if (!skill.pin)
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Skill ${skill.name} v${skill.version} was never approved; it cannot be rolled back to.`,
      );
    this.verifyPin(skill);
    const now = this.now();
    this.startTrial(skill, { ...skill.pin!, approvedAt: now, approvedBy: proposerName(actor) }, actor, now, { rollback: true });
    this.desk.events.emit('skill', { skillId: skill.skillId, name: skill.name, version: skill.version, state: 'trial', notice: null });
    return this.get(skill.skillId);
  }

  /** The pin holds when the stored code hashes to what was approved and the capabilities and budget are the ones approved. */
  private verifyPin(skill: SkillRecord): void {
    const pin = skill.pin;
    const codeHash = skillCodeHash(skill.code);
    const broken = !pin
      ? 'it has no approval'
      : codeHash !== pin.codeHash || skill.codeHash !== pin.codeHash
        ? `its stored code hashes to ${codeHash}, not the approved ${pin.codeHash}`
        : skillCapabilitiesHash(skill.capabilities, skill.budget) !== pin.capabilitiesHash
          ? 'its capabilities or budget are not the approved ones'
          : null;
    if (!broken) return;
    const reason = `refused: ${broken}; a changed skill never runs under an old approval`;
    if (USABLE_SKILL_STATES.includes(skill.state)) this.transition(skill, 'disabled', SYSTEM_ACTOR, reason);
    throw new ExecutorError('SKILL_PIN_MISMATCH', `Skill ${skill.name} v${skill.version} was ${reason}.`, { skillId: skill.skillId });
  }

  /**
   * One use (a `runSkill`): LOW risk, run without asking because code, capabilities and budget are
   * pinned. Refused while paused, for a skill not in trial or active, and for one whose stored code no
   * longer matches its pin. In trial, any misstep disables it and tells the person.
   */
  async use(name: string, input: unknown, actor: Actor): Promise<SkillUseResult> {
    const { desk } = this;
    if (desk.paused) throw hostPausedError(desk.paused, 'no skill runs');
    const skill = desk.skills.newestByName(name, USABLE_SKILL_STATES);
    if (!skill) {
      const newest = desk.skills.newestByName(name);
      throw new ExecutorError(
        newest ? 'SKILL_NOT_USABLE' : 'SKILL_NOT_FOUND',
        newest
          ? `Skill ${name} cannot be used: its newest version (v${newest.version}) is ${newest.state}${newest.reason ? ` (${newest.reason})` : ''}.`
          : `There is no skill named ${name.slice(0, 100)}.`,
      );
    }
    this.verifyPin(skill);
    const inputIssue = firstIssue(validatorFor(skill.inputSchema), input);
    if (inputIssue) throw new ExecutorError('INVALID_INPUT', `The input does not match skill ${name}'s input schema: ${inputIssue}`);
    if (Buffer.byteLength(JSON.stringify(input) ?? 'null', 'utf8') > MAX_TOOL_ARGS_BYTES)
      throw new ExecutorError('INVALID_INPUT', `The input is larger than ${MAX_TOOL_ARGS_BYTES} bytes as JSON.`);
    const useId = `use_${randomUUID()}`;
    const common = { skillId: skill.skillId, name: skill.name, version: skill.version, codeHash: skill.codeHash, useId, risk: 'LOW' };
    // Written before the code runs: if it cannot be written, the skill does not run (fail closed).
    desk.db.transaction(() =>
      desk.audit.append({
        kind: 'skill.used',
        actor,
        detail: { ...common, phase: 'start', state: skill.state, inputSha256: sha256Hex(JSON.stringify(input) ?? 'null') },
      }),
    )();
    const run = await this.runOnce(skill, input, 'execute', { kind: 'use', useId });
    const { result } = run;
    // The sandbox's own refusal (its budget, none available, a Cancel) fails this use only; the skill is not blamed.
    const misstep = run.failsAt === 'quarantine' || run.failsAt === 'validation';
    const now = this.now();
    let state: SkillState = skill.state;
    let reason: string | null = null;
    desk.db.transaction(() => {
      desk.audit.append({
        kind: 'skill.used',
        actor,
        detail: {
          ...common,
          phase: 'end',
          ok: result.ok,
          code: result.code ?? null,
          durationMs: result.durationMs,
          calls: result.calls.length,
        },
      });
      const current = this.get(skill.skillId);
      if (!USABLE_SKILL_STATES.includes(current.state)) return;
      // A call beyond what it declared disables it in any state; in trial, so does every other misstep.
      if (misstep && (current.state === 'trial' || result.code === 'UNDECLARED_CALL')) {
        state = 'disabled';
        reason = `${current.state === 'trial' ? 'trial' : 'active'} use ${useId} failed (${result.code}): ${result.message}`;
      } else if (current.state === 'trial' && result.ok) {
        // Only a use that ran and behaved counts toward the trial.
        desk.skills.countTrialUse(skill.skillId, now);
        const after = this.get(skill.skillId);
        if (after.trial.uses >= after.trial.required && after.trial.untilAt !== null && now >= after.trial.untilAt) state = 'active';
      }
      if (state === current.state) return;
      assertSkillTransition(current.state, state);
      this.saveState(skill, current.state, state, reason, SYSTEM_ACTOR, now, { reason, useId });
    })();
    if (state !== skill.state)
      desk.events.emit('skill', {
        skillId: skill.skillId,
        name: skill.name,
        version: skill.version,
        state,
        notice: state === 'disabled' ? `Skill ${skill.name} v${skill.version} was disabled: ${reason}` : null,
      });
    return {
      useId,
      skillId: skill.skillId,
      name: skill.name,
      codeHash: skill.codeHash,
      ok: result.ok,
      ...(result.ok ? { output: result.output } : { code: result.code, message: result.message }),
      logs: run.raw.logs,
      durationMs: result.durationMs,
      state,
    };
  }

  /** The stop switch: every usable or waiting skill disabled, inside the pause's own transaction. */
  disableAllForPause(actor: Actor): SkillRecord[] {
    const now = this.now();
    const affected = this.desk.skills.list(['awaiting_owner', 'trial', 'active']);
    for (const skill of affected) {
      this.saveState(skill, skill.state, 'disabled', 'the person stopped all agents', actor, now, { reason: 'stop switch' });
    }
    return affected;
  }

  /** "Save as skill" on an executed runCode: its code becomes a proposal that goes through the whole pipeline. */
  async fromStep(stepId: string, actor: Actor, fields: unknown): Promise<SkillRecord> {
    const record = this.desk.steps.get(stepId);
    if (record.step.action !== 'runCode' || record.status !== 'executed')
      throw new ExecutorError(
        'INVALID_INPUT',
        `Step ${stepId} is a ${record.step.action} that is ${record.status}; only an executed runCode can be saved as a skill.`,
      );
    const args = record.step.args as {
      code: string;
      purpose?: string;
      capabilities?: unknown;
      timeoutMs?: number;
      language?: string;
      sandbox?: string;
    };
    if (args.language === 'python' || args.sandbox === 'docker')
      throw new ExecutorError('INVALID_INPUT', 'Only JavaScript for the light sandbox can become a skill.');
    const given = (fields && typeof fields === 'object' ? fields : {}) as Record<string, unknown>;
    const value = (record.result as { value?: unknown } | null)?.value;
    const jsonType = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value;
    return this.propose(
      {
        purpose: args.purpose ?? record.step.meta.purpose ?? 'saved from a step',
        inputSchema: { type: 'object' },
        outputSchema: ['string', 'number', 'boolean', 'null', 'array', 'object'].includes(jsonType) ? { type: jsonType } : {},
        examples: [{}, {}, {}],
        capabilities: args.capabilities ?? {},
        budget: {
          timeMs: Math.min(5000, Math.max(100, Math.round(args.timeoutMs ?? this.desk.policy.lightSandbox.defaultTimeoutMs))),
          calls: 0,
        },
        code: args.code,
        ...given,
      },
      actor,
      { fromStepId: stepId },
    );
  }

  /**
   * Repetition: the same code (normalised: comments and layout aside) run by one agent as approved,
   * executed runCode steps, at least the policy's threshold of times, and not yet a skill.
   */
  repetitionNotices(agent?: string): RepetitionNotice[] {
    const threshold = this.desk.policy.skills.repetitionThreshold;
    const rows = this.desk.db
      .prepare(
        `SELECT step_id, step_json, finished_at FROM steps WHERE action = 'runCode' AND status = 'executed' ORDER BY finished_at DESC LIMIT 5000`,
      )
      .all() as { step_id: string; step_json: string; finished_at: string | null }[];
    const known = new Set(this.desk.skills.list().map((skill) => sha256Hex(normaliseCode(skill.code))));
    const groups = new Map<string, RepetitionNotice>();
    for (const row of rows) {
      const step = JSON.parse(row.step_json) as {
        args: { code: string; purpose?: string };
        meta: { agent?: string; client?: string; purpose?: string };
      };
      // One agent: an MCP session's issued identity, or one agent run (its steps carry "run <id>").
      const by = step.meta.agent ?? (step.meta.client?.startsWith('run ') ? step.meta.client : undefined);
      if (!by || (agent !== undefined && by !== agent)) continue;
      const codeHash = sha256Hex(normaliseCode(step.args.code));
      if (known.has(codeHash)) continue;
      const key = `${by}\u0000${codeHash}`;
      const group = groups.get(key);
      if (group) group.times += 1;
      else
        groups.set(key, {
          agent: by,
          codeHash,
          times: 1,
          lastStepId: row.step_id,
          purpose: step.args.purpose ?? step.meta.purpose ?? null,
          lastAt: row.finished_at ?? '',
          text: '',
        });
    }
    return [...groups.values()]
      .filter((group) => group.times >= threshold)
      .map((group) => ({ ...group, text: `seen ${group.times} times: save as a skill?` }));
  }
}
