import type { CodeRunResult } from '../domain/code-run.js';
import type { RunHooks } from '../domain/live-output.js';
import type { ActionArgs } from '../domain/step.js';
import type { CapabilityAudit } from '../sandbox/light/tool-bridge.js';

export interface HeavyCodeRequest {
  stepId: string;
  args: ActionArgs<'runCode'>;
  /** simulate: a dry run without effects outside the container; execute: the real run. */
  mode: 'simulate' | 'execute';
  /** Each brokered call the heavy sandbox makes on the code's behalf is audited through this. */
  auditCapabilityCall: CapabilityAudit;
  /** The live output and the Cancel signal; a cancelled run answers EXECUTION_CANCELLED. */
  hooks?: RunHooks;
}

/**
 * The seam to the Docker sandbox: runCode delegates to it for Python and for `sandbox: "docker"`.
 * It answers with the same result shape as the light sandbox and never throws.
 */
export interface HeavyCodeRunner {
  run(request: HeavyCodeRequest): Promise<CodeRunResult>;
}
