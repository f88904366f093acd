import type { VerificationKeyLine } from '../../audit/keys/audit-keys.js';
import type { AuditPage, AuditRecordRaw } from '../../audit/log/audit-query.js';
import type { EpochKeys } from '../../audit/keys/key-ratchet.js';
import type { KeyProtection } from '../../audit/keys/key-store.js';
import type { VerifyProgress, VerifyReport } from '../../audit/verify/verify-codes.js';
import type { PublishResult } from '../../audit/witness/witness-publisher.js';
import type { Actor } from '../../domain/actor.js';
import type { ErrorShape, ExecutorError } from '../../domain/errors.js';
import type { HostPauseView } from '../../domain/host-pause.js';
import type { StorageHoldView } from '../../domain/storage-hold.js';
import type { LiveRunView } from '../../domain/live-output.js';
import type { ModelProvider } from '../../domain/model-settings.js';
import type { RememberedRule, RuleLifetime } from '../../domain/remembered-rule.js';
import type { Evaluation } from '../../domain/risk.js';
import type { Preview, StepRecord } from '../../domain/step-record.js';
import type { Step } from '../../domain/step.js';
import type { RepetitionNotice, SkillRecord, SkillState, SkillUseResult } from '../../domain/skill.js';
import type { KeyStatus } from '../../executor/rooms/audit-desk.js';
import type { EnvironmentStatus } from '../../executor/rooms/host-settings.js';
import type {
  PlanRevertPreview,
  PlanRevertResult,
  RevertPreview,
  SessionRevertPreview,
  SessionRevertResult,
} from '../../executor/rooms/reverts.js';
import type { StepChangesPage } from '../../executor/step-changes.js';
import type { ExecutorEvents } from '../../executor/step-desk.js';
import type { AgentReadVerdict } from '../../policy/agent-read.js';
import type { Policy } from '../../policy/policy-file.js';
import type { RuleHits } from '../../store/rule-hit-repository.js';
import type { StepListFilter, StepSummaryFilter, StepSummaryPage } from '../../store/step-repository.js';
import type { SameFileReport } from '../../executor/rooms/same-file.js';

/**
 * What the protocol's server side (handlers, dispatch, the server and the in-process client) asks of
 * the Executor: one member per method it answers, the events it carries, and the request gate it
 * counts messages in. The Executor satisfies it as it is; a transport never sees the rest (opening,
 * closing, recovery), which stays with whoever owns the data directory (host.ts, the CLI).
 */
export interface IpcExecutorPort {
  readonly dataDir: string;
  /** Counts each message from arrival to reply, so background work (previews, plans running on) waits for a gap between requests. */
  readonly requests: { served<T>(handle: () => Promise<T>): Promise<T> };
  on<E extends keyof ExecutorEvents>(event: E, listener: (...args: ExecutorEvents[E]) => void): unknown;
  off<E extends keyof ExecutorEvents>(event: E, listener: (...args: ExecutorEvents[E]) => void): unknown;
  describeError(error: unknown): ErrorShape;
  /** Set once the data directory was moved, removed or replaced under the executor: every request is answered with it. */
  readonly dataDirLost: ExecutorError | null;
  recordIpcRefusal(kind: 'ipc.rejected' | 'ipc.denied', actor: Actor, detail: Record<string, unknown>): void;

  evaluateStep(step: Step): Evaluation;

  listSkills(states?: readonly SkillState[]): SkillRecord[];
  getSkill(skillId: string): SkillRecord;
  usableSkills(): SkillRecord[];
  proposeSkill(input: unknown, actor: Actor): Promise<SkillRecord>;
  approveSkill(skillId: string, actor: Actor, expected?: { codeHash?: string }): SkillRecord;
  rejectSkill(skillId: string, actor: Actor, reason: string): SkillRecord;
  editSkill(skillId: string, actor: Actor, change: unknown): Promise<SkillRecord>;
  rollbackSkill(skillId: string, actor: Actor): SkillRecord;
  recheckSkill(skillId: string, actor: Actor): Promise<SkillRecord>;
  disableSkill(skillId: string, actor: Actor, reason: string): SkillRecord;
  useSkill(name: string, input: unknown, actor: Actor): Promise<SkillUseResult>;
  skillFromStep(stepId: string, actor: Actor, fields: unknown): Promise<SkillRecord>;
  skillRepetitions(agent?: string): RepetitionNotice[];
  propose(planInput: unknown, actor: Actor): Promise<StepRecord[]>;
  submitAndSchedule(planInput: unknown, actor: Actor): Promise<StepRecord[]>;
  simulateStep(stepId: string, actor: Actor): Promise<{ preview: Preview; previewHash: string }>;
  listLiveRuns(stepId?: string): LiveRunView[];

  approve(
    stepId: string,
    actor: Actor,
    options?: { previewHash?: string | null; execute?: boolean; hunks?: number[] },
  ): Promise<StepRecord>;
  editStep(stepId: string, actor: Actor, change: { content?: string; command?: string; stepHash?: string }): Promise<StepRecord>;
  approveAndRemember(
    stepId: string,
    actor: Actor,
    options: { previewHash?: string; execute?: boolean; rule: unknown; lifetime: RuleLifetime },
  ): Promise<{ step: StepRecord; rule: RememberedRule }>;
  reject(stepId: string, actor: Actor, reason: string): Promise<StepRecord>;
  cancel(stepId: string, actor: Actor): Promise<StepRecord>;
  executeStep(stepId: string, actor: Actor): Promise<StepRecord>;

  previewRevert(stepId: string): RevertPreview;
  revertStep(stepId: string, actor: Actor, options?: { force?: boolean }): Promise<StepRecord>;
  previewRevertPlan(planId: string, leave?: readonly string[]): PlanRevertPreview;
  revertPlan(planId: string, actor: Actor, options?: { force?: boolean; leave?: readonly string[] }): Promise<PlanRevertResult>;
  listAgentSessions(): { agent: string; label: string | null; steps: number; firstAt: string; lastAt: string }[];
  previewRevertSession(agent: string, leave?: readonly string[]): SessionRevertPreview;
  revertSession(agent: string, actor: Actor, options?: { force?: boolean; leave?: readonly string[] }): Promise<SessionRevertResult>;

  /** One step as `actor` may read it (to an agent: its own only, without secret content). */
  stepFor(stepId: string, actor: Actor): StepRecord;
  /** A record as `actor` may read it: what every reply and event to an agent carries. */
  recordFor(actor: Actor, record: StepRecord): StepRecord;
  previewRevertFor(stepId: string, actor: Actor): RevertPreview;
  stepChangesFor(stepId: string, actor: Actor, offset?: number): StepChangesPage;
  stepUpdatedAt(stepId: string): string | undefined;
  listStepsFor(filter: StepListFilter, actor: Actor): StepRecord[];
  listStepSummariesFor(filter: Omit<StepSummaryFilter, 'owner'>, actor: Actor): StepSummaryPage & { agents?: string[] };
  stepChanges(stepId: string, offset?: number): StepChangesPage;
  sameFile(stepId: string): SameFileReport | null;

  getAudit(query?: unknown): AuditPage;
  getAuditRecord(seq: number): AuditRecordRaw;
  verifyAudit(options?: {
    onProgress?: (progress: VerifyProgress) => void;
    verificationKeys?: EpochKeys[];
    workers?: number;
  }): Promise<VerifyReport>;
  auditExportRange(range?: { from?: number; to?: number }): { from: number; to: number };
  exportAuditText(
    range?: { from?: number; to?: number },
    maxBytes?: number,
  ): { jsonl: string; records: number; checkpoints: number; from: number; to: number };
  hashAuditValue(value: string, onProgress?: (progress: VerifyProgress) => void): Promise<{ digest: string; seqs: number[] }>;
  publishToWitnesses(): Promise<PublishResult[]>;
  rotateKeys(actor: Actor, reason?: string): { previousKeyId: string; keyId: string };
  exportVerificationKeys(options?: { keep?: boolean }): VerificationKeyLine[];
  keyStatus(): KeyStatus;

  pause(actor: Actor, reason?: string): Promise<HostPauseView>;
  resume(actor: Actor, options?: { takeUp?: boolean }): HostPauseView;
  pauseState(forAgent?: boolean): HostPauseView;
  storageHold(): StorageHoldView;

  getPolicy(): Policy;
  /** Whether an outside agent's own read tool may read `paths`; audited as agent.read either way. */
  checkAgentRead(tool: string, paths: string[], actor: Actor, folders?: boolean): AgentReadVerdict;
  setPolicy(input: unknown, actor: Actor): Policy;
  listRuleHits(): RuleHits[];
  modelApiKey(provider: ModelProvider): string | undefined;
  setModelApiKey(provider: ModelProvider, key: string | null, actor: Actor): void;
  readonly modelKeyProtection: KeyProtection;
  environmentStatus(): Promise<EnvironmentStatus>;
}
