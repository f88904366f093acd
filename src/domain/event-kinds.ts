/**
 * Every kind of record the audit log knows. Extending it is one line here: the type and the
 * check in isEventKind() (src/audit/event-log.ts) both come from this list, so an unknown kind
 * cannot slip into the log; the window suggests the same names in its audit filter.
 */
export const EVENT_KINDS = [
  'app.started',
  'app.stopped',
  'policy.changed',
  /** policy.json at open differed from the policy the log last recorded: edited outside Executor (detail: before, after, policySha256). */
  'policy.edited_outside',
  'ipc.rejected',
  'ipc.denied',
  'key.created',
  'key.rotated',
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
  /** A remembered rule approved a step, in the transaction of that approval (detail: ruleId). */
  'rule.applied',
] as const;
