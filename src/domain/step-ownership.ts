import type { Actor } from './actor.js';
import { ExecutorError } from './errors.js';
import type { Step } from './step.js';

/*
 * What an agent may see of the steps: only those its own issued identity proposed. The person's
 * channels see every step. The rule lives here once, so the host's methods, its event stream and
 * the MCP tools cannot disagree about it.
 */

/** Whether the actor speaks for an agent (whose view of the steps is scoped to its own). */
export function isAgentActor(actor: Actor): boolean {
  return actor.channel === 'mcp';
}

/**
 * Whether `actor` may see and act on `step`. An agent owns a step only when the host stamped the
 * step with the agent's issued identity; the client name it gave is a label and decides nothing,
 * and a step from before identities were issued (no `meta.agent`) belongs to no agent.
 */
export function mayAccessStep(actor: Actor, step: Step): boolean {
  if (!isAgentActor(actor)) return true;
  return (
    step.meta.origin === 'agent' && typeof step.meta.agent === 'string' && actor.agent !== undefined && step.meta.agent === actor.agent
  );
}

/**
 * The answer for an id that names no step. An agent asking about a step it does not own gets this
 * same error, word for word, so the answer never tells it that such a step exists.
 */
export function unknownStepError(stepId: string): ExecutorError {
  return new ExecutorError('NOT_FOUND', `There is no step with id ${stepId}.`, { stepId });
}
