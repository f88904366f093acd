import type { BlobStore } from '../backup/blob-store.js';
import type { FileChange } from '../backup/file-changes.js';
import type { Preview, StepRecord } from '../domain/step-record.js';
import type { ActionArgs, ActionName } from '../domain/step.js';
import type { RiskHints } from '../policy/evaluate-step.js';
import type { Policy } from '../policy/policy-file.js';
import type { RuleTarget } from '../policy/remembered-rules.js';
import type { KbRepository } from '../store/kb-repository.js';

/** What an action may use. Seams the core owns; the executor provides them. */
export interface ActionContext {
  stepId: string;
  policy: Policy;
  dataDir: string;
  blobs: BlobStore;
  kb: KbRepository;
  /** Opens a URL in the person's default browser (Electron: shell.openExternal). Absent where no browser is attached. */
  openExternal?: (url: string) => Promise<void>;
}

/**
 * An execution made ready but not yet performed: the executor backs up `fileChanges` and records
 * the intent before it calls `apply`, so no effect happens without its way back.
 */
export interface PreparedExecution {
  fileChanges: FileChange[];
  apply(): Promise<Record<string, unknown>>;
}

export interface ActionModule<A extends ActionName> {
  action: A;
  /** Whether revert can undo the effects. Irreversible actions say so in the prompt and in history. */
  reversible: boolean;
  /** One line for lists: what the step does, in words. */
  summarize(args: ActionArgs<A>): string;
  assess(args: ActionArgs<A>, ctx: ActionContext): RiskHints;
  /** What a remembered rule would have to cover for this step to run without asking; absent = no rule can. */
  ruleTarget?(args: ActionArgs<A>): RuleTarget;
  /** The dry run: no side effects. */
  simulate(args: ActionArgs<A>, ctx: ActionContext): Promise<Preview>;
  prepare(args: ActionArgs<A>, ctx: ActionContext): Promise<PreparedExecution>;
  /** Undo effects outside files (files are restored from their backups by the executor). */
  revertOther?(record: StepRecord, ctx: ActionContext, force: boolean): Promise<Record<string, unknown>>;
}
