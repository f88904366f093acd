/**
 * What running a snippet of code gives back, whichever sandbox ran it. Never thrown: a failure is a
 * value with a code, so an agent can read why and try again.
 */
export type CodeRunFailureCode =
  | 'EXECUTION_TIMEOUT'
  | 'EXECUTION_ERROR'
  | 'EXECUTION_BLOCKED'
  | 'EXECUTION_DENIED'
  | 'EXECUTION_CRASHED'
  | 'OUTPUT_TOO_LARGE'
  | 'SANDBOX_UNAVAILABLE'
  /** The person's Cancel stopped the run (the worker or container was killed). */
  | 'EXECUTION_CANCELLED';

export const CODE_RUN_FAILURE_CODES: readonly CodeRunFailureCode[] = [
  'EXECUTION_TIMEOUT',
  'EXECUTION_ERROR',
  'EXECUTION_BLOCKED',
  'EXECUTION_DENIED',
  'EXECUTION_CRASHED',
  'OUTPUT_TOO_LARGE',
  'SANDBOX_UNAVAILABLE',
  'EXECUTION_CANCELLED',
];

/** A request the code made (or, in a dry run, would have made) through a brokered capability. */
export interface CapabilityCallSummary {
  tool: string;
  target: string;
  decision: 'allowed' | 'denied' | 'recorded';
  reason?: string;
}

interface CodeRunCommon {
  /** console output, line by line, capped in total. */
  logs: string[];
  durationMs: number;
  /**
   * Something was cut to be kept: log lines dropped or shortened, or the value nested past
   * MAX_VALUE_DEPTH (those containers read "[cut: nested deeper than 32 levels]") or holding lone
   * surrogates (now U+FFFD).
   */
  truncated?: boolean;
  capabilityCalls?: CapabilityCallSummary[];
}

export type CodeRunResult =
  | (CodeRunCommon & { ok: true; value: unknown })
  | (CodeRunCommon & { ok: false; code: CodeRunFailureCode; message: string; retryAfterMs?: number });
