import type { BlobStore } from '../backup/blob-store.js';
import type { DirectoryLedger } from '../fs/created-directories.js';
import type { FileChange } from '../backup/file-changes.js';
import type { RunHooks } from '../domain/live-output.js';
import type { PersonEdit, PlanBasisStep, Preview, StepRecord } from '../domain/step-record.js';
import type { ActionArgs, ActionName, Step, StepOf } from '../domain/step.js';
import type { EffectRating } from '../policy/command-effects.js';
import type { RiskHints } from '../policy/evaluate-step.js';
import type { Policy } from '../policy/policy-file.js';
import type { TreeAfter } from '../policy/tree-after.js';
import type { RuleTarget } from '../policy/remembered-rules.js';
import type { LightSandbox } from '../sandbox/light/light-sandbox.js';
import type { CapabilityAudit } from '../sandbox/light/tool-bridge.js';
import type { KbRepository } from '../store/kb-repository.js';
import type { HeavyCodeRunner } from '../sandbox/docker/heavy-code-runner.js';

/** See ActionContext.planOverlay: writes by real absolute path (content null: deleted). */
export interface PlanOverlay {
  writes: { absolutePath: string; content: Buffer | null }[];
  basis: PlanBasisStep[];
}

/** What an action may use. Seams the core owns; the executor provides them. */
export interface ActionContext {
  stepId: string;
  policy: Policy;
  dataDir: string;
  blobs: BlobStore;
  kb: KbRepository;
  /**
   * The tree the step's plan leaves: the disk with the plan's file writes laid over it. A file step is
   * judged on it (four ordinary-looking writes can make a git directory). Absent: the disk alone.
   */
  plannedTree?: TreeAfter;
  /**
   * A dry run only: what the plan's earlier steps (approved, or still proposed) will have written
   * when this step runs, in plan order, and which steps those are. A command's dry run sees them.
   */
  planOverlay?: PlanOverlay;
  /** The preview the person approved, when it still belongs to the approval (heavy steps compare their real run with it). */
  approvedPreview?: Preview | null;
  /**
   * Why no dry run could be made, as the person read it when they approved without a preview: a build
   * that runs the project's code names its content digest there, and only that build may run.
   */
  approvedPreviewError?: string | null;
  /** Opens a URL in the person's default browser (Electron: shell.openExternal). Absent where no browser is attached. */
  openExternal?: (url: string) => Promise<void>;
  lightSandbox: LightSandbox;
  /** The Docker sandbox for heavy code; absent until one is wired in. */
  heavyCodeRunner?: HeavyCodeRunner;
  /**
   * Hears of each folder the step's writes create, as it appears (execute only): the executor records
   * it with the step's backups, and revert removes it again when it is still the step's and empty.
   */
  directoryLedger?: DirectoryLedger;
  /** Writes one `capability.call` audit record linked to this step; throws if it cannot (the call is then refused). */
  auditCapabilityCall: CapabilityAudit;
  /**
   * Present while the step's sandbox run (dry or real) is shown live: its output goes to `onOutput`
   * as it comes, and `signal` aborts when the person cancels (the container or worker is killed).
   */
  run?: RunHooks;
}

/**
 * A step's run, ready but not yet applied: the executor backs up `fileChanges` and records the
 * intent before it calls `apply`, so no effect happens without its way back.
 */
export interface ReadyRun {
  fileChanges: FileChange[];
  /** What a real run (a step whose preview comes from running it) changes, as a preview: its effects are rated before `apply`. */
  preview?: Preview;
  apply(): Promise<Record<string, unknown>>;
  /**
   * Starts, while the executor backs up and records the intent, the part of `apply` no one sees: a write's new
   * content to a temporary file beside its target, in a folder that is there already (no folder is made ahead of
   * the intent record). `apply` places it; when the step does not go on to `apply`, `discardPrepared` takes it back.
   */
  prepareAhead?(): void;
  discardPrepared?(): Promise<void>;
  /**
   * Set when the run really ran the step (in a sandbox) and it differs from the approved
   * preview: nothing is applied, and the step goes back to the person with this preview and reason.
   */
  drift?: { preview: Preview; reason: string; detail?: Record<string, unknown> };
}

/**
 * The person's edit of a step before approving, as the action makes it: the step as they changed it
 * (the executor checks it against the schema and the policy like any proposal), and what changed, for
 * the step's `edit` (the executor adds who, when and which version).
 */
export interface EditedStep {
  revised: unknown;
  change: Omit<PersonEdit, 'kind' | 'by' | 'at' | 'version' | 'proposedStepHash' | 'hunks'>;
}

/**
 * "Approve with only these hunks", as the action makes it: the step with the accepted hunks of its
 * preview's diff alone, what changed (for the step's `edit`), and a preview of that step made now,
 * which the approval binds to.
 */
export interface StepWithHunks {
  revised: Step;
  change: Pick<PersonEdit, 'hunks' | 'proposedContentHash' | 'approvedContentHash' | 'diff'>;
  preview: Preview;
}

export interface ActionModule<A extends ActionName> {
  action: A;
  /** Whether revert can undo the effects. Irreversible actions say so in the prompt and in history. */
  reversible: boolean;
  /**
   * The preview comes from really running the step in a sandbox. Execute then does not re-simulate
   * to check the preview (that would run it twice); `run` compares its own run and reports drift.
   */
  previewFromRun?: boolean;
  /** Its dry run and real run run something in a sandbox that may take long: the window shows them live, with Cancel. */
  runsLive?: boolean;
  /**
   * Its dry run reads ctx.planOverlay (a command's copy of the workspace has the plan's earlier writes
   * laid over it). The overlay is worked out only for such an action: it reads every earlier step of
   * the plan, and a plan of 500 writes would otherwise read it 500 times for previews that never look.
   */
  readsPlanOverlay?: boolean;
  /** One line for lists: what the step does, in words. */
  summarize(args: ActionArgs<A>): string;
  assess(args: ActionArgs<A>, ctx: ActionContext): RiskHints;
  /** What a remembered rule would have to cover for this step to run without asking; absent = no rule can. */
  ruleTarget?(args: ActionArgs<A>, ctx: ActionContext): RuleTarget | null;
  /**
   * Rates what a run changes (a preview of this step, dry or real) by the policy's effect rules;
   * null when the preview carries no changeset. Absent for actions whose effects their arguments name.
   */
  rateEffects?(preview: Preview, ctx: ActionContext, args: ActionArgs<A>): EffectRating | null;
  /** The dry run: no side effects. */
  simulate(args: ActionArgs<A>, ctx: ActionContext): Promise<Preview>;
  /** The real run, up to its effects: what it will change (a command's sandbox run happens here), and `apply`. */
  run(args: ActionArgs<A>, ctx: ActionContext): Promise<ReadyRun>;
  /** Undo effects outside files (files are restored from their backups by the executor). */
  revertOther?(record: StepRecord, ctx: ActionContext, force: boolean): Promise<Record<string, unknown>>;
  /** What the person may edit before approving (a write's `content`, a command's `command` line); absent: approved or rejected as proposed. */
  editable?: 'content' | 'command';
  /**
   * The step with the person's edit of what `editable` names (`text`: the new content or command
   * line), or a typed refusal of an edit it cannot take. `proposed` is the proposer's own version,
   * which what changed is measured from, however many versions the person made.
   */
  edited?(step: StepOf<A>, text: string, proposed: Step): EditedStep;
  /**
   * "Approve with only these hunks" of the diff the person was shown (`shown`, the step's preview):
   * 'whole' when every hunk was accepted (the step is approved as it is), else the step with those
   * hunks alone; a typed refusal when the step's diff cannot be split. Absent: approved whole.
   */
  withHunks?(
    step: StepOf<A>,
    shown: Preview | null,
    accepted: readonly number[],
    proposed: Step,
    ctx: ActionContext,
  ): Promise<StepWithHunks | 'whole'>;
}
