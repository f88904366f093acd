import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Actor } from '../../domain/actor.js';
import type { CapabilityCallSummary, CodeRunResult } from '../../domain/code-run.js';
import { ExecutorError, type ErrorCode, type ErrorShape } from '../../domain/errors.js';
import { assertWithinJsonLimits, PLAN_LIMITS } from '../../domain/json-limits.js';
import type { Evaluation, SkillPinFacts } from '../../domain/risk.js';
import { isAgentActor } from '../../domain/step-ownership.js';
import type { StepRecord } from '../../domain/step-record.js';
import { stepHash, type Step } from '../../domain/step.js';
import { recordableResult } from '../../actions/run-code.js';
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
import type { SandboxUsage } from '../../sandbox/light/budget.js';
import { ToolBridge, type BridgeMode } from '../../sandbox/light/tool-bridge.js';
import { hostAllowed, TOOL_REGISTRY } from '../../sandbox/light/tool-registry.js';
import { isNoSpace } from '../../store/storage-errors.js';
import type { LiveRun } from '../live-runs.js';
import { POLICY_ACTOR, SYSTEM_ACTOR, type StepDesk } from '../step-desk.js';

/** A use that breaks what the skill declared: any one disables it, in trial and active alike (judgeUse). */
const CONTRACT_BREACHES: readonly string[] = ['UNDECLARED_CALL', 'BUDGET_EXCEEDED', 'SCHEMA_MISMATCH', 'EXECUTION_BLOCKED'];

/** What a skill whose check the stop switch cut short says, back in draft: not its fault, and what the person can do. */
const STOPPED_CHECK_REASON =
  'stopped by the stop switch: the person stopped all agents while its examples ran in quarantine, and their runs were killed; nothing about the skill was judged. Check it again once agents may work (`executor skills recheck <skillId>`).';

/** What a skill says, back in draft, whose check a stopped host left unfinished (recoverChecksAtOpen). */
const INTERRUPTED_CHECK_REASON =
  'stopped: Executor stopped while its examples ran in quarantine; nothing about the skill was judged. Check it again (`executor skills recheck <skillId>`).';

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
function undeclaredBecause(call: CapabilityCallSummary, declared: SkillCapabilities, pastBudget = false): string | null {
  const tool = TOOL_REGISTRY.find((candidate) => candidate.name === call.tool);
  if (!tool) return `tools.${call.tool} is no tool`;
  if (declared[tool.capability] === undefined) return `it did not declare the ${tool.capability} capability`;
  if (tool.capability === 'fetch' && !pastBudget) {
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

/**
 * A use's charge against the sandbox budget, in its outcome's commit rather than a commit (and a
 * sync) of its own. The budget merely forgetting a run must not cost the use its outcome record.
 */
function chargeBudget(desk: StepDesk, usage: SandboxUsage): void {
  try {
    desk.lightSandbox.charge(usage);
  } catch (error) {
    desk.log(`executor: WARNING: light sandbox: a skill use could not be recorded against the budget: ${(error as Error).message}`);
  }
}

/** Which light-sandbox worker a use may take: the one set aside for this skill under this pinned code, no other. */
function workerKeyOf(skill: SkillRecord): string {
  return `${skill.skillId}@${skill.pin?.codeHash ?? skill.codeHash}`;
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
 * misstep; after it the skill is active and runs without asking, each use a LOW `runSkill` step
 * approved by its pin and audited under its code hash. Each state change is one transaction with its skill.* record.
 */
export class SkillsRoom {
  /** Skills used in this process: each keeps a light-sandbox worker of its own while it stays usable (keepWorkersWarm). */
  private readonly warmed = new Set<string>();
  /** Uses under way, by step: a skill disabled while one runs stops it (stopInFlightOfDisabled). */
  private readonly inFlight = new Map<string, { skillId: string; live: LiveRun; stoppedBecause?: string }>();

  constructor(private readonly desk: StepDesk) {
    // Any skill that stops being usable (disabled, superseded, the stop switch) loses its worker at once.
    desk.events.on('skill', () => {
      this.stopInFlightOfDisabled();
      this.keepWorkersWarm();
    });
  }

  /**
   * A use under way of a skill now disabled (by the person, or by another use's misstep) is stopped at
   * once, its worker killed: the person's disable, like their Cancel, must not leave the code running
   * (calling its hosts) for the rest of its time budget. Its step ends failed, EXECUTION_CANCELLED,
   * saying why. The stop switch stops its runs itself (stop-switch.ts), and a superseded version's
   * use ends on its own: only a disable stops them here.
   */
  private stopInFlightOfDisabled(): void {
    const { desk } = this;
    if (desk.paused || desk.closed) return;
    for (const use of this.inFlight.values()) {
      if (use.stoppedBecause) continue;
      const standing = desk.skills.standing(use.skillId);
      if (standing && standing.state !== 'disabled') continue;
      use.stoppedBecause = standing ? 'the skill was disabled while this use ran' : 'the skill is gone';
      use.live.cancel();
    }
  }

  /**
   * A worker set aside per usable skill that was used here (src/sandbox/light/worker-pool.ts): a use
   * does not wait for a worker to start. The key is the skill's id and pinned code hash, so the
   * worker serves that approval only; each is a fresh process, taken by one use and replaced after
   * it. Started at a skill's first use in this process, not when the host opens (a one-shot CLI
   * command would pay for processes it never uses); given up when the skill is no longer usable, on
   * the stop switch and when the host closes.
   */
  private keepWorkersWarm(): void {
    const { desk } = this;
    if (desk.closed) return;
    const usable = desk.paused ? [] : desk.skills.list(USABLE_SKILL_STATES);
    const keys = usable.filter((skill) => skill.pin && this.warmed.has(skill.skillId)).map(workerKeyOf);
    for (const skillId of this.warmed) if (!usable.some((skill) => skill.skillId === skillId)) this.warmed.delete(skillId);
    desk.lightSandbox.reserveWorkers(keys, desk.policy.lightSandbox);
  }

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
    // Held to a plan's limits before it is parsed: the schema walk recurses, and a schema nested thousands deep was a RangeError, not an answer.
    assertWithinJsonLimits(input, PLAN_LIMITS, { code: 'INVALID_INPUT', subject: 'The skill' });
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
  private async check(draft: SkillRecord, recheckedBy?: Actor): Promise<SkillRecord> {
    let skill = recheckedBy
      ? this.transition(draft, 'quarantine', recheckedBy, null, { recheck: true })
      : this.transition(draft, 'quarantine', SYSTEM_ACTOR, null);
    // An example the skill would never be given proves nothing about it.
    const inputValidator = validatorFor(skill.inputSchema);
    for (const [i, example] of skill.examples.entries()) {
      const issue = firstIssue(inputValidator, example);
      if (issue)
        return this.transition(skill, 'rejected', SYSTEM_ACTOR, `quarantine: example ${i + 1} is outside the input schema: ${issue}`);
    }
    const runs: ClassifiedRun[] = [];
    // The first example that fails decides: the rest would only spend the sandbox's time (twenty hanging examples are one budget, not twenty).
    for (const example of skill.examples) {
      if (this.desk.paused) break;
      // The stop switch kills the example's worker at once (desk.agentCode), as it does a step's run.
      const run = await this.desk.agentCode.run((signal) => this.runOnce(skill, example, 'quarantine', { kind: 'quarantine', signal }));
      runs.push(run);
      if (run.failsAt !== null) break;
    }
    // The stop switch came while its examples ran: it sent the skill back to draft in its own transaction
    // (stopChecksForPause). What the cut-short runs said is nobody's verdict on the skill: nothing is recorded.
    // Closed meanwhile: the next open finds it in quarantine with no check running and sends it back to draft (recoverChecksAtOpen).
    if (this.desk.closed)
      throw new ExecutorError('NOT_AVAILABLE', `Executor stopped while skill ${skill.name} v${skill.version} was being checked.`);
    if (this.desk.paused || this.desk.skills.standing(skill.skillId)?.state !== 'quarantine') return this.get(skill.skillId);
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
    context: { kind: 'quarantine'; signal: AbortSignal } | { kind: 'use'; stepId: string; planId: string; signal: AbortSignal },
  ): Promise<ClassifiedRun & { raw: CodeRunResult; usage?: SandboxUsage }> {
    const { desk } = this;
    const inFlight = new AbortController();
    // A use is a live run, a quarantine example one of desk.agentCode: the person's Cancel and the stop switch abort it (its worker and its calls).
    const stop = () => inFlight.abort();
    if (context.signal.aborted) inFlight.abort();
    else context.signal.addEventListener('abort', stop, { once: true });
    const bridge = new ToolBridge({
      registry: TOOL_REGISTRY,
      mode,
      // One more than the budget is let through to the broker (and refused there), so an overrun is seen, not guessed.
      maxCalls: skill.budget.calls,
      // A use's calls are its step's records (found with the step); quarantine's are the skill's.
      audit: (detail) =>
        desk.db.transaction(() =>
          desk.audit.append({
            kind: 'capability.call',
            actor: SYSTEM_ACTOR,
            ...(context.kind === 'use' ? { planId: context.planId, stepId: context.stepId } : {}),
            detail: {
              ...detail,
              skillId: skill.skillId,
              codeHash: skill.codeHash,
              ...(context.kind === 'use' ? {} : { phase: 'quarantine' }),
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
    const charged: { usage?: SandboxUsage } = {};
    try {
      raw = await desk.lightSandbox.run(
        {
          code: skill.code,
          timeoutMs: skill.budget.timeMs,
          bridge,
          input,
          signal: inFlight.signal,
          // A use runs on its skill's own worker, and its charge against the sandbox budget is written with its outcome.
          ...(context.kind === 'use' ? { workerKey: workerKeyOf(skill), chargeTo: (usage: SandboxUsage) => (charged.usage = usage) } : {}),
        },
        desk.policy.lightSandbox,
      );
    } finally {
      context.signal.removeEventListener('abort', stop);
      inFlight.abort();
    }
    const calls = raw.capabilityCalls ?? [];
    const base = { input, durationMs: raw.durationMs, calls };
    const fail = (
      failsAt: NonNullable<ClassifiedRun['failsAt']>,
      code: string,
      message: string,
    ): ClassifiedRun & { raw: CodeRunResult; usage?: SandboxUsage } => ({
      raw,
      ...charged,
      failsAt,
      result: { ...base, ok: false, code, message },
    });
    // The broker's own record of each call, held against what the skill declared: whatever else the broker said.
    // Past its budget the broker refused a call before looking at it (no target): of a tool it declared, that is an
    // overrun (judged below), not a call to a host it did not declare.
    const undeclared = calls
      .map((call, index) => ({ call, why: undeclaredBecause(call, skill.capabilities, index >= skill.budget.calls) }))
      .find((found) => found.why);
    if (undeclared)
      return fail(
        'validation',
        'UNDECLARED_CALL',
        `called tools.${undeclared.call.tool} (${undeclared.call.target || 'no target'}) beyond what it declared: ${undeclared.why}`,
      );
    // Reads in quarantine answer from nothing (BridgeMode 'quarantine'): what the code did after one
    // says nothing about the skill (an empty file is not its data), and whatever it gives back cannot
    // carry a file's or the KB's contents to the agent. Only what it called is judged; its trial, with
    // the real data and after the person approved, judges the rest.
    const readWithoutData =
      mode === 'quarantine' &&
      calls.some((call) => call.decision === 'recorded' && !TOOL_REGISTRY.find((tool) => tool.name === call.tool)?.network);
    // An example that passes with a marker: it did what quarantine lets it do, and the marker says what that was.
    const passedWith = (code: string, message: string, output?: unknown): ClassifiedRun & { raw: CodeRunResult; usage?: SandboxUsage } => ({
      raw,
      ...charged,
      failsAt: null,
      result: { ...base, ok: true, ...(output === undefined ? {} : { output }), code, message },
    });
    const ranWithoutData = (then: string, output?: unknown) =>
      passedWith(
        'RAN_WITHOUT_DATA',
        `ran without data: quarantine answers tools.readFile with an empty text and tools.kb.search with no entries (nothing is read before you approve); ${then}`,
        output,
      );
    if (calls.length > skill.budget.calls) {
      if (readWithoutData) return ranWithoutData(`then it made ${calls.length} tool calls (its budget is ${skill.budget.calls})`);
      return fail('quarantine', 'BUDGET_EXCEEDED', `made ${calls.length} tool calls; its budget is ${skill.budget.calls} per use`);
    }
    // The call past the budget is the broker's refusal of an overrun (judged above), not of a call it declared.
    const refused = calls.slice(0, skill.budget.calls).find((call) => call.decision === 'denied');
    if (refused)
      return fail(
        'validation',
        'UNDECLARED_CALL',
        `called tools.${refused.tool} (${refused.target || 'no target'}), which the broker refused: ${refused.reason}`,
      );
    if (!raw.ok) {
      if (raw.code === 'EXECUTION_BLOCKED') return fail('validation', raw.code, raw.message);
      // The sandbox could not run it now (its energy budget, no sandbox, the person's Cancel): not the skill's misstep.
      if (raw.code === 'EXECUTION_DENIED' || raw.code === 'SANDBOX_UNAVAILABLE' || raw.code === 'EXECUTION_CANCELLED')
        return fail('sandbox', raw.code, raw.message);
      if (readWithoutData) return ranWithoutData(`with that it ended ${raw.code}: ${raw.message}`);
      // Quarantine sends nothing: code that stopped at its first (recorded) request did what it could.
      if (mode !== 'execute' && raw.code === 'EXECUTION_ERROR' && calls.some((call) => call.decision === 'recorded'))
        return passedWith('NETWORK_RECORDED', 'stopped at a network request, which quarantine records and does not send');
      if (raw.code === 'EXECUTION_TIMEOUT')
        return fail('quarantine', 'BUDGET_EXCEEDED', `took longer than its time budget of ${skill.budget.timeMs} ms and was killed`);
      return fail('quarantine', raw.code, raw.message);
    }
    const mismatch = firstIssue(validatorFor(skill.outputSchema), raw.value);
    if (readWithoutData)
      return ranWithoutData(
        mismatch ? `with that it returned a value outside its output schema: ${mismatch}` : 'with that it returned the output shown',
        mismatch ? undefined : raw.value,
      );
    if (mismatch) return fail('quarantine', 'SCHEMA_MISMATCH', `returned a value outside its output schema: ${mismatch}`);
    return { raw, ...charged, failsAt: null, result: { ...base, ok: true, output: raw.value } };
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
    this.assertRoomToUse(skill);
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

  /**
   * The policy's `skills.maxActive`, for every way a skill becomes usable (approval and rollback alike):
   * another version of the same name does not count, as it is superseded by this one.
   */
  private assertRoomToUse(skill: SkillRecord): void {
    const limit = this.desk.policy.skills.maxActive;
    const usable = this.desk.skills.list(USABLE_SKILL_STATES).filter((other) => other.name !== skill.name);
    if (usable.length >= limit)
      throw new ExecutorError(
        'SKILL_LIMIT',
        `At most ${limit} skills may be usable at once (policy skills.maxActive); ${usable.map((other) => other.name).join(', ')} are. Disable one first.`,
      );
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
    assertWithinJsonLimits(change, PLAN_LIMITS, { code: 'INVALID_INPUT', subject: 'The change' });
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
    this.assertRoomToUse(skill);
    const now = this.now();
    this.startTrial(skill, { ...skill.pin!, approvedAt: now, approvedBy: proposerName(actor) }, actor, now, { rollback: true });
    this.desk.events.emit('skill', { skillId: skill.skillId, name: skill.name, version: skill.version, state: 'trial', notice: null });
    return this.get(skill.skillId);
  }

  /** Why the skill's pin no longer holds (stored code, capabilities or budget not the approved ones), or null when it holds. */
  private pinBroken(skill: SkillRecord): string | null {
    const pin = skill.pin;
    if (!pin) return 'it has no approval';
    const codeHash = skillCodeHash(skill.code);
    if (codeHash !== pin.codeHash || skill.codeHash !== pin.codeHash)
      return `its stored code hashes to ${codeHash}, not the approved ${pin.codeHash}`;
    if (skillCapabilitiesHash(skill.capabilities, skill.budget) !== pin.capabilitiesHash)
      return 'its capabilities or budget are not the approved ones';
    return null;
  }

  /** The pin holds when the stored code hashes to what was approved and the capabilities and budget are the ones approved. */
  private verifyPin(skill: SkillRecord): void {
    const broken = this.pinBroken(skill);
    if (!broken) return;
    const reason = `refused: ${broken}; a changed skill never runs under an old approval`;
    if (USABLE_SKILL_STATES.includes(skill.state)) this.transition(skill, 'disabled', SYSTEM_ACTOR, reason);
    throw new ExecutorError('SKILL_PIN_MISMATCH', `Skill ${skill.name} v${skill.version} was ${reason}.`, { skillId: skill.skillId });
  }

  /** A use as a step of its own: a plan of one runSkill step, the agent's (or the person's) own, naming the exact version and code hash. */
  private useStep(skill: SkillRecord, input: unknown, actor: Actor): Step {
    const planId = `plan-${randomUUID()}`;
    const agent = isAgentActor(actor) ? actor.agent : undefined;
    return {
      id: `step-${randomUUID()}`,
      planId,
      action: 'runSkill',
      args: { skill: skill.name, skillId: skill.skillId, version: skill.version, codeHash: skill.codeHash, input },
      meta: {
        origin: isAgentActor(actor) ? 'agent' : 'user',
        purpose: skill.purpose,
        ...(actor.client ? { client: actor.client.slice(0, 200) } : {}),
        ...(agent ? { agent } : {}),
      },
    };
  }

  /**
   * One use (a `runSkill` step, docs/skills.md): LOW, run without asking because code, capabilities
   * and budget are pinned. The step is written proposed → evaluated → approved (by the skill's pin) →
   * running in one group commit before the code runs (if that cannot be written, nothing runs), and
   * ended executed or failed in one more, with the skill's own bookkeeping (trial count, errors in a
   * row, a disable). Refused while paused and for a skill not in trial or active; a skill whose stored
   * code no longer matches its pin is refused as a denied step and disabled. How a misstep is judged:
   * `judgeUse`.
   */
  async use(name: string, input: unknown, actor: Actor): Promise<SkillUseResult> {
    const { desk } = this;
    if (desk.paused) throw hostPausedError(desk.paused, 'no skill runs');
    // Execution is held on a full data directory: a use is a step, and no step starts until there is room (storage-hold.ts).
    if (desk.hold.active) throw desk.heldError();
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
    // An input the skill would refuse is the caller's mistake, said before anything is recorded (as for a plan that does not parse).
    assertWithinJsonLimits(input, PLAN_LIMITS, { code: 'INVALID_INPUT', subject: 'The input' });
    if (Buffer.byteLength(JSON.stringify(input) ?? 'null', 'utf8') > MAX_TOOL_ARGS_BYTES)
      throw new ExecutorError('INVALID_INPUT', `The input is larger than ${MAX_TOOL_ARGS_BYTES} bytes as JSON.`);
    const inputIssue = firstIssue(validatorFor(skill.inputSchema), input);
    if (inputIssue) throw new ExecutorError('INVALID_INPUT', `The input does not match skill ${name}'s input schema: ${inputIssue}`);
    const step = this.useStep(skill, input, actor);
    const stepId = step.id;
    const broken = this.pinBroken(skill);
    if (broken) return this.refuseChanged(skill, step, actor, broken);

    const pin = skill.pin!;
    if (!this.warmed.has(skill.skillId)) {
      // Its first use here takes a shared worker; from now on it keeps one of its own (replaced after each use).
      this.warmed.add(skill.skillId);
      this.keepWorkersWarm();
    }
    const approvedBySkill: SkillPinFacts = {
      skillId: skill.skillId,
      name: skill.name,
      version: skill.version,
      codeHash: pin.codeHash,
      approvedAt: pin.approvedAt,
      approvedBy: pin.approvedBy,
    };
    const evaluation: Evaluation = {
      allowed: true,
      risk: 'LOW',
      consent: 'none',
      reasons: [
        `Uses skill ${skill.name} v${skill.version}, approved by ${pin.approvedBy} on ${pin.approvedAt.slice(0, 10)}: its code (sha256 ${pin.codeHash.slice(0, 12)}…), capabilities and budget are pinned.`,
      ],
      mitigations: [
        `At most ${skill.budget.timeMs} ms and ${skill.budget.calls} tool call${skill.budget.calls === 1 ? '' : 's'}; a call beyond what it declared, an overrun or an output outside its schema disables it.`,
      ],
      reversible: false,
      approvedBySkill,
    };
    const pinActor: Actor = { ...POLICY_ACTOR, client: `skill ${skill.name} v${skill.version}` };
    const hash = stepHash(step);
    const start = { iso: new Date().toISOString(), ms: performance.now() };
    let live: LiveRun | null = null;
    const runIt = () => this.runOnce(skill, input, 'execute', { kind: 'use', stepId, planId: step.planId, signal: live!.signal });
    // Code that cannot reach the network has no effect outside its worker: it starts as soon as its
    // records are committed, and they are not synced on their own: the outcome's commit syncs the WAL
    // with them in it, and nothing is answered before that sync (a commit that fails throws its run
    // away unseen; a process crash keeps a committed WAL). One sync per use instead of two, each the
    // larger part of a small record's cost. Code granted the network may act at a host, so it waits
    // until its records are on disk, as any step's effect does.
    const overlap = skill.capabilities.fetch === undefined;
    let early: ReturnType<typeof runIt> | null = null;
    // Written before the code runs: if it cannot be written, the skill does not run (fail closed).
    const written = desk.commits.run(
      () => {
        // The stop switch, or a disable, may have come while the group waited: nothing is written, nothing runs.
        if (desk.paused || desk.closed || desk.hold.active) return null;
        const current = desk.skills.standing(skill.skillId);
        if (!current || !USABLE_SKILL_STATES.includes(current.state)) return current?.state ?? null;
        desk.steps.insertPlan({ planId: step.planId, purpose: `use skill ${skill.name} v${skill.version}`, steps: [step] }, actor);
        // Each hop its own record, as any step's; the step read back once.
        const started = desk.steps.transitions(stepId, [
          { to: 'evaluated', actor: POLICY_ACTOR, patch: { evaluation }, extra: { detail: { risk: 'LOW', reasons: evaluation.reasons } } },
          {
            to: 'approved',
            actor: pinActor,
            patch: { approval: { by: pinActor, at: start.iso, stepHash: hash, previewHash: null } },
            extra: { detail: { auto: true, stepHash: hash, skillPin: approvedBySkill } },
          },
          {
            to: 'running',
            actor,
            patch: { startedAt: start.iso },
            extra: { detail: { stepHash: hash, codeHash: skill.codeHash, skillId: skill.skillId, files: [] } },
          },
        ]);
        // Seen as running in the same turn it is recorded running: the stop switch and Cancel find it from here on.
        live = desk.liveRuns.start(stepId, `Use skill ${skill.name} v${skill.version}`, 'realRun');
        this.inFlight.set(stepId, { skillId: skill.skillId, live });
        if (overlap) early = runIt();
        return started;
      },
      { durable: !overlap },
    );
    let running: Awaited<typeof written>;
    try {
      running = await written;
    } catch (error) {
      // Not on disk: whatever the early run returns is never seen.
      (live as LiveRun | null)?.cancel();
      (early as ReturnType<typeof runIt> | null)?.catch(() => undefined);
      this.inFlight.delete(stepId);
      if (live) desk.liveRuns.finish(live);
      // Its records could not be written on a full data directory: execution is held, as for any step, and nothing ran.
      if (isNoSpace(error) && !desk.closed) throw desk.holdForStorage(error);
      throw error;
    }
    if (running === null || typeof running === 'string') {
      if (desk.paused) throw hostPausedError(desk.paused, 'no skill runs');
      if (desk.hold.active) throw desk.heldError();
      throw new ExecutorError(
        'SKILL_NOT_USABLE',
        `Skill ${name} v${skill.version} stopped being usable (${running ?? 'closed'}) before it ran.`,
      );
    }
    desk.emitStep(running);
    // Marked outside the database before it runs: a lost WAL still leaves the next open knowing it ran.
    desk.auditLog.writtenHead?.stepStarted(stepId);

    const liveRun = live as unknown as LiveRun;
    let run: Awaited<ReturnType<typeof runIt>>;
    try {
      run = await ((early as ReturnType<typeof runIt> | null) ?? runIt());
    } finally {
      desk.liveRuns.finish(liveRun);
    }
    const stoppedBecause = this.inFlight.get(stepId)?.stoppedBecause;
    this.inFlight.delete(stepId);
    if (stoppedBecause && !run.result.ok && run.result.code === 'EXECUTION_CANCELLED')
      run = { ...run, result: { ...run.result, message: `Stopped: ${stoppedBecause}; its worker was killed.` } };
    const { result } = run;
    const outcome = await desk.recordAfterEffect(stepId, true, () =>
      desk.commits.run(() => {
        if (run.usage) chargeBudget(desk, run.usage);
        if (desk.steps.currentStatus(stepId) === 'cancelled') {
          // The person's Cancel (or the stop switch) came while it ran: the step stays cancelled, what the run did noted on it, and
          // the skill is not judged by a run cut short.
          desk.steps.note(
            stepId,
            'step.cancel_outcome',
            actor,
            result.ok ? { result: { ...recordableResult(run.raw) } } : { error: { code: result.code, message: result.message } },
          );
          const standing = desk.skills.standing(skill.skillId);
          return {
            record: desk.steps.get(stepId),
            state: standing?.state ?? skill.state,
            reason: null,
            errorsInRow: standing?.errorsInRow ?? 0,
          };
        }
        const judged = this.judgeUse(skill, run, stepId);
        const finishedAt = new Date().toISOString();
        const facts = { skillId: skill.skillId, name: skill.name, version: skill.version, codeHash: skill.codeHash, state: judged.state };
        const recorded = recordableResult(run.raw);
        // The span first: the outcome's transition then reads the step back with it, once.
        desk.steps.recordRunSpan(stepId, 'realRun', desk.runSpan(undefined, result.ok ? 'finished' : 'failed', start));
        let record: StepRecord;
        if (result.ok) {
          const stepResult = { ...recorded, skill: facts };
          record = desk.steps.transition(stepId, 'executed', actor, { result: stepResult, finishedAt }, { detail: { result: stepResult } });
        } else {
          const error: ErrorShape = {
            code: result.code as ErrorCode,
            message: result.message ?? 'the skill failed',
            details: {
              skill: { ...facts, ...(judged.reason ? { disabledBecause: judged.reason } : {}), errorsInRow: judged.errorsInRow },
              logs: recorded.logs,
              durationMs: result.durationMs,
              calls: result.calls,
            },
          };
          record = desk.steps.transition(stepId, 'failed', actor, { error, finishedAt }, { detail: { error } });
        }
        return { record, ...judged };
      }),
    );
    desk.emitStep(outcome.record);
    // A cancelled use changed no skill's state itself (the stop switch said its own disables).
    if (outcome.state !== skill.state && outcome.record.status !== 'cancelled')
      desk.events.emit('skill', {
        skillId: skill.skillId,
        name: skill.name,
        version: skill.version,
        state: outcome.state,
        notice: outcome.state === 'disabled' ? `Skill ${skill.name} v${skill.version} was disabled: ${outcome.reason}` : null,
      });
    if (outcome.record.status === 'cancelled') {
      const error = outcome.record.error ?? { code: 'STEP_CANCELLED', message: 'The use was cancelled.' };
      return {
        stepId,
        planId: step.planId,
        skillId: skill.skillId,
        name: skill.name,
        version: skill.version,
        codeHash: skill.codeHash,
        ok: false,
        code: error.code,
        message: error.message,
        logs: run.raw.logs,
        durationMs: result.durationMs,
        state: outcome.state,
      };
    }
    return {
      stepId,
      planId: step.planId,
      skillId: skill.skillId,
      name: skill.name,
      version: skill.version,
      codeHash: skill.codeHash,
      ok: result.ok,
      ...(result.ok ? { output: result.output } : { code: result.code, message: result.message }),
      logs: run.raw.logs,
      durationMs: result.durationMs,
      state: outcome.state,
      ...(outcome.reason ? { reason: outcome.reason } : {}),
    };
  }

  /**
   * What one use says about the skill, inside the outcome's transaction (docs/skills.md, "When a skill
   * misbehaves"). A breach of what it declared (a call beyond its capabilities, more time or calls than
   * its budget, an output outside its schema, code the guard refuses) disables it in trial and active
   * alike: that is the contract the person approved, and nothing else earned the trust. A plain error
   * (the code threw or crashed) disables it in trial; in active it fails that use and is counted, and
   * the policy's `skills.maxConsecutiveErrors` of them in a row disable it. The sandbox's own refusal
   * (its budget, none available, a Cancel) blames nothing. A use that behaves counts toward the trial
   * and ends a run of errors.
   */
  private judgeUse(
    skill: SkillRecord,
    run: ClassifiedRun,
    stepId: string,
  ): { state: SkillState; reason: string | null; errorsInRow: number } {
    const { desk } = this;
    const { result } = run;
    const current = desk.skills.standing(skill.skillId) ?? { state: 'disabled' as SkillState, trialUses: 0, errorsInRow: 0 };
    const unchanged = { state: current.state, reason: null, errorsInRow: current.errorsInRow };
    // Disabled, superseded or stopped while it ran: what it did is recorded on its step; the skill's state is not this use's to change.
    if (!USABLE_SKILL_STATES.includes(current.state)) return unchanged;
    const now = this.now();
    let state: SkillState = current.state;
    let reason: string | null = null;
    let errorsInRow = current.errorsInRow;
    const said = `${current.state} use (step ${stepId}) failed (${result.code}): ${result.message}`;
    if (result.ok) {
      if (errorsInRow > 0) desk.skills.clearErrors(skill.skillId);
      errorsInRow = 0;
      if (current.state === 'trial') {
        // Only a use that ran and behaved counts toward the trial.
        desk.skills.countTrialUse(skill.skillId, now);
        const after = this.get(skill.skillId);
        if (after.trial.uses >= after.trial.required && after.trial.untilAt !== null && now >= after.trial.untilAt) state = 'active';
      }
    } else if (run.failsAt === 'sandbox') {
      return unchanged;
    } else if (CONTRACT_BREACHES.includes(result.code ?? '')) {
      state = 'disabled';
      reason = said;
    } else if (current.state === 'trial') {
      state = 'disabled';
      reason = said;
    } else {
      errorsInRow = desk.skills.countError(skill.skillId, now);
      const limit = desk.policy.skills.maxConsecutiveErrors;
      if (errorsInRow >= limit) {
        state = 'disabled';
        reason = `active: ${errorsInRow} uses in a row failed (policy skills.maxConsecutiveErrors is ${limit}); the last, step ${stepId}, with ${result.code}: ${result.message}`;
      }
    }
    if (state === current.state) return { state, reason: null, errorsInRow };
    assertSkillTransition(current.state, state);
    this.saveState(skill, current.state, state, reason, SYSTEM_ACTOR, now, { reason, stepId });
    return { state, reason, errorsInRow };
  }

  /**
   * A use of a skill whose stored code (or capabilities) no longer matches its pin: recorded as a
   * denied runSkill step, the skill disabled with the reason, in one transaction; then refused.
   */
  private async refuseChanged(skill: SkillRecord, step: Step, actor: Actor, broken: string): Promise<never> {
    const { desk } = this;
    const reason = `refused: ${broken}; a changed skill never runs under an old approval`;
    const error: ErrorShape = {
      code: 'SKILL_PIN_MISMATCH',
      message: `Skill ${skill.name} v${skill.version} was ${reason}.`,
      details: { skillId: skill.skillId, approvedCodeHash: skill.pin?.codeHash ?? null, storedCodeHash: skillCodeHash(skill.code) },
    };
    const evaluation: Evaluation = {
      allowed: false,
      risk: 'CRITICAL',
      consent: 'deny',
      reasons: [error.message],
      mitigations: [],
      reversible: false,
    };
    const denied = await desk.commits.run(() => {
      desk.steps.insertPlan({ planId: step.planId, purpose: `use skill ${skill.name} v${skill.version}`, steps: [step] }, actor);
      const record = desk.steps.transition(
        step.id,
        'denied',
        POLICY_ACTOR,
        { evaluation, error },
        { detail: { reasons: evaluation.reasons, error } },
      );
      const current = this.get(skill.skillId);
      if (USABLE_SKILL_STATES.includes(current.state))
        this.saveState(current, current.state, 'disabled', reason, SYSTEM_ACTOR, this.now(), { reason, stepId: step.id });
      return record;
    });
    desk.emitStep(denied);
    desk.events.emit('skill', {
      skillId: skill.skillId,
      name: skill.name,
      version: skill.version,
      state: 'disabled',
      notice: `Skill ${skill.name} v${skill.version} was disabled: ${reason}`,
    });
    throw new ExecutorError(error.code, error.message, { ...error.details, stepId: step.id, planId: step.planId });
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

  /**
   * The stop switch, inside the pause's own transaction: every skill being checked (its examples
   * running in quarantine) goes back to draft, saying so. Its runs are killed right after
   * (desk.agentCode); nothing they said is recorded, as the skill was not judged. The person checks
   * it again after resuming (`recheck`).
   */
  stopChecksForPause(actor: Actor): SkillRecord[] {
    const now = this.now();
    const affected = this.desk.skills.list(['quarantine', 'validation']);
    for (const skill of affected) {
      this.saveState(skill, skill.state, 'draft', STOPPED_CHECK_REASON, actor, now, { reason: 'stop switch' });
    }
    return affected;
  }

  /**
   * At open, before anything runs: a skill in quarantine or validation has no check running (one host
   * per data directory, and a check lives in its host), so one a stopped host left there goes back to
   * draft, saying so, for the person to check again. Nothing stays "in quarantine" for good.
   */
  recoverChecksAtOpen(): void {
    const left = this.desk.skills.list(['quarantine', 'validation']);
    if (left.length === 0) return;
    const now = this.now();
    this.desk.db.transaction(() => {
      for (const skill of left)
        this.saveState(skill, skill.state, 'draft', INTERRUPTED_CHECK_REASON, SYSTEM_ACTOR, now, {
          reason: 'restart',
          recoveredAtStart: true,
        });
    })();
  }

  /** A draft whose check was stopped (the stop switch, or a host that stopped while it ran) checked again from its first example. */
  async recheck(skillId: string, actor: Actor): Promise<SkillRecord> {
    if (this.desk.paused) throw hostPausedError(this.desk.paused, 'no skill is checked');
    const skill = this.get(skillId);
    if (skill.state !== 'draft')
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Skill ${skill.name} v${skill.version} is ${skill.state}; only a draft whose check was stopped can be checked again.`,
      );
    // check() moves it to quarantine before its first await: a second recheck meanwhile is refused above.
    return this.check(skill, actor);
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
