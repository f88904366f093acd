import { osUser, type Actor } from '../domain/actor.js';

/*
 * The ids a run gives what it asks for, fixed by the run, the iteration and the call's position:
 * a restart finds the step (or the question) a call already produced by its id, and never proposes
 * it twice, even when the host died between the proposal's commit and the run's own record of it.
 */

export function planIdFor(runId: string, iteration: number, position: number): string {
  return `${runId}-i${iteration}-c${position}`;
}

export function stepIdFor(runId: string, iteration: number, position: number): string {
  return `step-${runId}-i${iteration}-c${position}`;
}

export function questionIdFor(runId: string, iteration: number, position: number): string {
  return `q-${runId}-i${iteration}-c${position}`;
}

/** What a run's steps carry as their proposer's label, so History says which run asked. */
export function runLabel(runId: string): string {
  return `run ${runId}`;
}

/**
 * The proposer of a run's steps: an agent (the model) speaking through the run. It has no issued
 * identity, so no MCP session can see or cancel its steps, and the plan ids above are kept as given.
 */
export function runActor(runId: string): Actor {
  return { user: osUser(), channel: 'mcp', client: runLabel(runId) };
}
