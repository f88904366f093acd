/**
 * Every kind of record the audit log knows. Extending it is one line here: the type and the
 * check in isEventKind() (src/domain/audit-event.ts) both come from this list, so an unknown kind
 * cannot slip into the log; the window suggests the same names in its audit filter.
 */
export const EVENT_KINDS = [
  'app.started',
  'app.stopped',
  'policy.changed',
  /** policy.json at open differed from the policy the log last recorded: edited outside Executor (detail: before, after, policySha256). */
  'policy.edited_outside',
  /** The person stopped all agents (detail: reason, what was stopped: cancelledSteps, stoppedDryRuns, pausedRuns, heldSteps). */
  'host.paused',
  /** The person let agents work again (detail: pausedAt, pausedBy, reason, pausedMs, heldSteps). */
  'host.resumed',
  /** The data directory's disk had room again after execution was held on it (detail: heldSince, heldMs, dataDir, heldSteps, steps: each step held and its state). */
  'storage.recording_resumed',
  /** At open, the records a host killed while held on a full disk had kept in its reserve were written (detail: records: each one's kind, step and what was done with it). */
  'storage.held_records_recorded',
  'ipc.rejected',
  'ipc.denied',
  'key.created',
  'key.rotated',
  /** The machine's clock was found behind the log's time (detail: clock, loggedAt, behindMs); written by the log itself. */
  'clock.stepped',
  /** At open, the database was behind the head Executor had written outside it: its newest records were lost (detail: lostRecords, afterSeq, stepsNotRunAgain). */
  'audit.tail_lost',
  'audit.anchor_restored',
  'step.proposed',
  'step.evaluated',
  'step.consent_requested',
  'step.approved',
  'step.approved_with_edits',
  'step.edited',
  'step.rejected',
  'step.cancelled',
  'agent.rate_limited',
  'step.denied',
  'step.simulated',
  'step.execution_started',
  'step.executed',
  'step.failed',
  'step.interrupted',
  'step.reconsent',
  /** A step's preview is made again because an earlier step of its plan changed (detail: reason, becauseOf, from, to). */
  'step.preview_rebuilt',
  'step.execution_deferred',
  'step.reverted',
  'step.revert_forced',
  /** Nobody decided the step (or used its approval) within the consent expiry; detail: reason, deadline. */
  'step.expired',
  /** What restart recovery does with a step a stopped host left undecided (detail: from, action). */
  'step.recovered',
  /** A real run the person cancelled while it applied ended after all (detail: its result or error); the step stays cancelled. */
  'step.cancel_outcome',
  /** The host shut down while one of the step's runs was under way; its sandbox was stopped (detail: phase, startedAt, stoppedAt, durationMs, outputBytes, message). */
  'step.run_stopped_by_shutdown',
  'capability.call',
  /** An outside agent's own read tool (a hook's Read, read_file, Grep, …), allowed or denied (detail: tool, paths, allowed, reason). */
  'agent.read',
  /** A remembered rule approved a step, in the transaction of that approval (detail: ruleId). */
  'rule.applied',
  /** The model's API key was set or cleared (detail: provider, set); the key itself is never recorded. */
  'model.key_set',
  /** An agent run began (detail: runId, task, model, root, tools, limits; never a key). */
  'run.started',
  /** One model turn of a run, with its state, in one transaction (detail: runId, iteration, model, requestSha256, responseSha256, tokens, toolCalls [{callId, name, stepId}]). */
  'run.turn',
  /** A run asked the person (or an MCP agent did): detail runId|null, questionId, text, expiresAt. */
  'run.question',
  /** The person answered a question (detail: runId|null, questionId, answer). */
  'run.answered',
  /** A run ended (detail: runId, status, reason {code, message}, counters). */
  'run.ended',
  /** A skill was proposed (detail: skillId, name, version, codeHash, proposedBy, parentId, fromStepId). */
  'skill.proposed',
  /** A skill changed state (detail: skillId, name, from, to, codeHash, reason, and what the change rests on). */
  'skill.state',
  /**
   * One use of a skill, as logs written before uses were runSkill steps hold it (detail: skillId, name,
   * codeHash, useId, ok, code, durationMs, risk LOW). No longer written: kept so those logs still read.
   */
  'skill.used',
] as const;
