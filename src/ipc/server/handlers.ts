import type { Actor } from '../../domain/actor.js';
import type { IdentityRequest, IssuedIdentity } from './agent-identity.js';
import { ExecutorError } from '../../domain/errors.js';
import { describeIssues } from '../../domain/plan-parse.js';
import { StepSchema } from '../../domain/step.js';
import type { IpcExecutorPort } from './executor-port.js';
import { loadShellParser } from '../../policy/shell-parser.js';
import { checkWorkspaceRoot, policyWithRoot } from '../../policy/workspace-root.js';
import { checkedApiKey } from '../../domain/model-settings.js';
import { checkModel, modelSettingsView } from '../../runs/models/model-config.js';
import { boundedRecord, MAX_RECORD_BYTES, partOfRecordText } from '../../domain/step-record-cut.js';
import { isAgentActor, mayAccessStep } from '../../domain/step-ownership.js';
import type { StepRecord } from '../../domain/step-record.js';
import type { EventData, EventTopic } from '../protocol/wire-schemas.js';
import type { IpcChannel, MethodName, MethodResult, ParsedParams } from '../protocol/methods.js';
import type { RunService } from '../../runs/run-service.js';

/** What a handler knows about its caller: the channel comes from the credential, never from the message. */
export interface CallContext {
  channel: IpcChannel;
  actor: Actor;
  /** Adds topics to the caller's event stream (the transport decides how events travel). */
  subscribe(topics: EventTopic[]): EventTopic[];
  /** Sends an event to the caller's own session only (when it subscribed to the topic), e.g. the progress of its call. */
  notify<T extends EventTopic>(topic: T, data: EventData<T>): void;
  /**
   * Present on an agent session: the identity the host issued to it, or, given an earlier session's
   * credential, that agent's identity bound to this session instead (AGENT_CREDENTIAL_INVALID if forged);
   * with a family credential (or newFamily), a new agent of that client-and-folder family (agent-identity.ts).
   */
  agentIdentity?: (request: IdentityRequest) => IssuedIdentity;
  /**
   * The caller shares the Executor's process and may close it as soon as the call returns (the CLI
   * without a host): propose then prepares the previews before it answers, as a background queue
   * would be closed with the process.
   */
  sameProcess?: boolean;
  /** Present when the host serves the web UI (`executor serve`). */
  issueWebUrl?: () => string;
  /** Present when the host serves the web UI: a one-time link that streams records [from, to] as a download. */
  issueAuditDownload?: (range: { from: number; to: number }) => { url: string; fileName: string; expiresAt: string };
  /** Present in a host (the app, `executor serve`): its agent runs and questions. */
  runs?: RunService;
}

/** A run lives as long as a host: without one there is nobody to wait on the person. */
function runsOf(context: CallContext): RunService {
  if (!context.runs)
    throw new ExecutorError('NOT_AVAILABLE', 'Agent runs need a running host: start the app or `executor serve`, then try again.');
  return context.runs;
}

/** How often a long call reports progress at most: often enough to move a bar, rare enough to cost nothing. */
export const PROGRESS_EVERY_MS = 100;

/** Passes the first call, then at most one per `everyMs`, and always the one that completes (checked = total). */
function throttled<T extends { checked: number; total: number }>(send: (progress: T) => void, everyMs: number): (progress: T) => void {
  let lastSentAt = 0;
  return (progress) => {
    const now = Date.now();
    if (progress.checked < progress.total && now - lastSentAt < everyMs) return;
    lastSentAt = now;
    send(progress);
  };
}

type Handler<M extends MethodName> = (
  executor: IpcExecutorPort,
  params: ParsedParams<M>,
  context: CallContext,
) => Promise<MethodResult<M>> | MethodResult<M>;

/** The server side of the method table. The mapped type makes a method without a handler a compile error. */
export const HANDLERS: { [M in MethodName]: Handler<M> } = {
  // A host answers at once; the previews follow as step events (`evaluated` = "preparing preview").
  // Every record an agent gets back is its own view: no secret content (src/executor/secret-content.ts).
  propose: async (executor, { plan }, { actor, sameProcess }) =>
    (await (sameProcess ? executor.propose(plan, actor) : executor.submitAndSchedule(plan, actor))).map((record) =>
      executor.recordFor(actor, record),
    ),
  evaluateStep: async (executor, params, { actor }) => {
    await loadShellParser();
    if ('stepId' in params) return executor.evaluateStep(executor.stepFor(params.stepId, actor).step);
    // The wire schema only checks shape; the step itself is validated here like any proposed step.
    const parsed = StepSchema.safeParse(params.step);
    if (!parsed.success) {
      const issues = describeIssues(parsed.error);
      throw new ExecutorError('INVALID_INPUT', `The step is not valid: ${issues.join('; ')}`, { issues });
    }
    return executor.evaluateStep(parsed.data);
  },
  simulateStep: (executor, { stepId }, { actor }) => executor.simulateStep(stepId, actor),
  approve: (executor, { stepId, previewHash, execute, hunks }, { actor }) =>
    executor.approve(stepId, actor, { previewHash, execute, hunks }),
  editStep: (executor, { stepId, content, command, stepHash }, { actor }) =>
    executor.editStep(stepId, actor, { content, command, stepHash }),
  approveAndRemember: (executor, { stepId, previewHash, execute, rule, lifetime }, { actor }) =>
    executor.approveAndRemember(stepId, actor, { previewHash, execute, rule, lifetime }),
  listRuleHits: (executor) => executor.listRuleHits(),
  reject: (executor, { stepId, reason }, { actor }) => executor.reject(stepId, actor, reason),
  cancel: async (executor, { stepId }, { actor }) => executor.recordFor(actor, await executor.cancel(stepId, actor)),
  listLiveRuns: (executor, params) => executor.listLiveRuns(params?.stepId),
  executeStep: async (executor, { stepId }, { actor }) => executor.recordFor(actor, await executor.executeStep(stepId, actor)),
  previewRevert: (executor, { stepId }, { actor }) => executor.previewRevertFor(stepId, actor),
  revertStep: (executor, { stepId, force }, { actor }) => executor.revertStep(stepId, actor, { force }),
  // An agent's view of the steps is its own (see step-ownership.ts); the person's channels see all.
  listSteps: (executor, params, { actor }) => executor.listStepsFor(params ?? {}, actor),
  listStepSummaries: (executor, params, { actor }) => executor.listStepSummariesFor(params ?? {}, actor),
  getSameFile: (executor, { stepId }, { actor }) => executor.sameFile(executor.stepFor(stepId, actor).step.id),
  getStepChanges: (executor, { stepId, offset }, { actor }) => executor.stepChangesFor(stepId, actor, offset),
  previewRevertPlan: (executor, { planId, leave }) => executor.previewRevertPlan(planId, leave),
  revertPlan: (executor, { planId, force, leave }, { actor }) => executor.revertPlan(planId, actor, { force, leave }),
  listAgentSessions: (executor) => executor.listAgentSessions(),
  previewRevertSession: (executor, { agent, leave }) => executor.previewRevertSession(agent, leave),
  revertSession: (executor, { agent, force, leave }, { actor }) => executor.revertSession(agent, actor, { force, leave }),
  // Every channel's reply is bounded: a step of many MB (a big write's content and diff, a command's
  // output) is cut and says so (`cut`), and getStepPart pages the whole (src/ipc/client/whole-step-record.ts).
  getStep: (executor, { stepId, maxBytes }, { actor }) => boundedRecord(executor.stepFor(stepId, actor), maxBytes ?? MAX_RECORD_BYTES),
  getStepPart: (executor, { stepId, offset }, { actor }) => recordTextPart(executor, stepId, offset ?? 0, actor),
  checkRead: (executor, { tool, paths, folders }, { actor }) => executor.checkAgentRead(tool, paths, actor, folders === true),
  agentIdentity: (_executor, params, context) => {
    if (!context.agentIdentity) throw new ExecutorError('NOT_AVAILABLE', 'Only an agent session has an issued identity.');
    return context.agentIdentity(params ?? {});
  },
  getAudit: (executor, params) => executor.getAudit(params ?? {}),
  getAuditRecord: (executor, { seq }) => executor.getAuditRecord(seq),
  exportAudit: (executor, params) => executor.exportAuditText(params ?? {}),
  issueAuditDownload: (executor, params, context) => {
    if (!context.issueAuditDownload) {
      throw new ExecutorError(
        'NOT_AVAILABLE',
        'This host serves no downloads (only `executor serve` does); use exportAudit, or `executor audit export --out FILE`.',
      );
    }
    // The range is fixed now, at the click: records appended before the link is fetched are not in it.
    const range = executor.auditExportRange(params ?? {});
    return { ...context.issueAuditDownload(range), ...range };
  },
  verifyAudit: (executor, params, context) => {
    const progressId = params?.progressId;
    return executor.verifyAudit({
      onProgress: progressId
        ? throttled((progress) => context.notify('verify', { progressId, ...progress }), PROGRESS_EVERY_MS)
        : undefined,
    });
  },
  pauseAgents: (executor, params, { actor }) => executor.pause(actor, params?.reason),
  // Without a host (the CLI's own process) the held plans are left to the next host's start, not run here.
  resumeAgents: (executor, _params, { actor, sameProcess }) => executor.resume(actor, { takeUp: !sameProcess }),
  getPause: (executor, _params, { actor }) => executor.pauseState(isAgentActor(actor)),
  getStorageHold: (executor) => executor.storageHold(),
  getEnvironment: (executor) => executor.environmentStatus(),
  getKeyStatus: (executor) => executor.keyStatus(),
  hashAuditValue: (executor, { value, progressId }, context) =>
    executor.hashAuditValue(
      value,
      progressId ? throttled((progress) => context.notify('verify', { progressId, ...progress }), PROGRESS_EVERY_MS) : undefined,
    ),
  rotateKeys: (executor, params, { actor }) => executor.rotateKeys(actor, params?.reason),
  publishToWitnesses: (executor) => executor.publishToWitnesses(),
  exportVerificationKeys: (executor, params) => executor.exportVerificationKeys({ keep: params?.keep }),
  getPolicy: (executor) => executor.getPolicy(),
  setPolicy: (executor, { policy }, { actor }) => executor.setPolicy(policy, actor),
  addWorkspaceRoot: (executor, { path }, { actor }) =>
    executor.setPolicy(policyWithRoot(executor.getPolicy(), checkWorkspaceRoot(path, executor.dataDir)), actor),
  getModelSettings: (executor) => modelSettingsView(executor),
  setModelSettings: (executor, { settings }, { actor }) => {
    const { model: _previous, ...rest } = executor.getPolicy();
    executor.setPolicy(settings === null ? rest : { ...rest, model: settings }, actor);
    return modelSettingsView(executor);
  },
  setModelKey: (executor, { provider, key }, { actor }) => {
    executor.setModelApiKey(provider, key, actor);
    return modelSettingsView(executor);
  },
  // Settings not saved yet are checked whole, not merged with the saved ones (a cleared address means the public API).
  checkModel: (executor, params) =>
    checkModel(
      params?.settings
        ? { getPolicy: () => ({ model: params.settings }), modelApiKey: (provider) => executor.modelApiKey(provider) }
        : executor,
      params?.key !== undefined ? { apiKey: checkedApiKey(params.key) } : {},
    ),
  issueWebUrl: (_executor, _params, context) => {
    if (!context.issueWebUrl) throw new ExecutorError('NOT_AVAILABLE', 'This host serves no web UI; start one with `executor serve`.');
    return { url: context.issueWebUrl() };
  },
  subscribe: (_executor, { topics }, context) => ({ topics: context.subscribe(topics) }),
  startRun: (_executor, params, context) => runsOf(context).start(params, context.actor),
  listRuns: (_executor, params, context) => runsOf(context).list(params ?? {}),
  getRun: (_executor, { runId }, context) => runsOf(context).get(runId),
  getRunTrace: (_executor, { runId, fromIteration, limit }, context) => runsOf(context).trace(runId, fromIteration, limit),
  answerRun: (_executor, { runId, text }, context) => runsOf(context).answer(runId, text, context.actor),
  cancelRun: (_executor, { runId, reason }, context) => runsOf(context).cancel(runId, context.actor, reason),
  revertRun: (_executor, { runId, force, dryRun, leave }, context) =>
    runsOf(context).revert(runId, context.actor, { force, dryRun, leave }),
  askUser: (_executor, { question, expirySeconds }, context) => runsOf(context).askUser(context.actor, question, expirySeconds),
  getAnswer: (_executor, { questionId, waitMs }, context) => runsOf(context).getAnswer(context.actor, questionId, waitMs ?? 0),
  listQuestions: (_executor, params, context) => runsOf(context).listQuestions(params?.waitingOnly === true),
  answerQuestion: (_executor, { questionId, text }, context) => runsOf(context).answerQuestion(questionId, text, context.actor),
  listSkills: (executor, params) => ({ skills: executor.listSkills(params?.states), notices: executor.skillRepetitions() }),
  getSkill: (executor, { skillId }) => executor.getSkill(skillId),
  listUsableSkills: (executor) =>
    executor.usableSkills().map(({ name, version, purpose, inputSchema, outputSchema, codeHash, state }) => ({
      name,
      version,
      purpose,
      inputSchema,
      outputSchema,
      codeHash,
      state,
    })),
  proposeSkill: (executor, { skill }, { actor }) => executor.proposeSkill(skill, actor),
  approveSkill: (executor, { skillId, codeHash }, { actor }) => executor.approveSkill(skillId, actor, { codeHash }),
  rejectSkill: (executor, { skillId, reason }, { actor }) => executor.rejectSkill(skillId, actor, reason),
  editSkill: (executor, { skillId, change }, { actor }) => executor.editSkill(skillId, actor, change),
  rollbackSkill: (executor, { skillId }, { actor }) => executor.rollbackSkill(skillId, actor),
  recheckSkill: (executor, { skillId }, { actor }) => executor.recheckSkill(skillId, actor),
  disableSkill: (executor, { skillId, reason }, { actor }) => executor.disableSkill(skillId, actor, reason ?? ''),
  useSkill: (executor, { name, input }, { actor }) => executor.useSkill(name, input, actor),
  skillFromStep: (executor, { stepId, fields }, { actor }) => executor.skillFromStep(stepId, actor, fields ?? {}),
};

/**
 * Recent serializations of whole records, per host, by step: a reader pages a record of many MB in
 * hundreds of calls, and loading and serializing it for each page made reading it quadratic (minutes
 * for 7 MB, with every other client waiting behind each page). A copy serves while the step's
 * updated_at is unchanged, which also keeps one reader's pages one consistent version.
 */
const recordTexts = new WeakMap<IpcExecutorPort, Map<string, { updatedAt: string; step: StepRecord['step']; json: string; at: number }>>();
const RECORD_TEXTS_KEPT = 4;
const RECORD_TEXT_MS = 60_000;

function recordTextPart(executor: IpcExecutorPort, stepId: string, offset: number, actor: Actor) {
  const texts = recordTexts.get(executor) ?? new Map();
  recordTexts.set(executor, texts);
  // The person's whole record and an agent's view of it differ (secret content): never one served for the other.
  const key = `${isAgentActor(actor) ? 'agent' : 'person'}:${stepId}`;
  const kept = texts.get(key);
  if (
    kept &&
    Date.now() - kept.at < RECORD_TEXT_MS &&
    executor.stepUpdatedAt(stepId) === kept.updatedAt &&
    mayAccessStep(actor, kept.step)
  ) {
    return partOfRecordText(stepId, kept.updatedAt, kept.json, offset);
  }
  const record = executor.stepFor(stepId, actor);
  const json = JSON.stringify(record);
  texts.delete(key);
  texts.set(key, { updatedAt: record.updatedAt, step: record.step, json, at: Date.now() });
  for (const old of texts.keys()) {
    if (texts.size <= RECORD_TEXTS_KEPT) break;
    texts.delete(old);
  }
  return partOfRecordText(stepId, record.updatedAt, json, offset);
}
