import type { Actor } from './actor.js';
import type { CodeRunResult } from './code-run.js';
import type { DirectoryRevertOutcome } from './created-directory.js';
import type { ContentLost } from './content-lost.js';
import type { ErrorShape } from './errors.js';
import type { Evaluation } from './risk.js';
import type { StepStatus } from './state-machine.js';
import type { Step } from './step.js';

/** One file as a preview shows it: enough for the person to see exactly what changes. */
export interface FileChangePreview {
  path: string;
  existedBefore: boolean;
  existsAfter: boolean;
  sizeBefore: number;
  sizeAfter: number;
  preHash: string | null;
  postHash: string | null;
  binary: boolean;
  /** Unified diff, or null when binary or too large to diff in time (exact snapshots are still kept). */
  diff: string | null;
  diffOmittedReason?: string;
  /** Present only when the permission bits change. */
  modeBefore?: number | null;
  modeAfter?: number | null;
  /** What the sandbox produced that is not carried back with this file ("set-uid bit dropped"). */
  dropped?: string[];
  /** A new file only: the permission bits the command asked for, when the person's umask took some away (modeAfter is what lands). */
  modeRequested?: number;
  /**
   * What an existing file that stays loses: `emptied`, nothing but white space or NUL bytes is left of content it
   * had; `replaced`, less than half of its old content is still in it (keptPercent), or it is binary.
   */
  contentLoss?: 'emptied' | 'replaced';
  /** With contentLoss `replaced` of a text file: the share of its old non-blank lines' bytes still there, in percent. */
  keptPercent?: number;
}

/** A stream of a sandboxed run as the preview shows it. */
export interface OutputPreview {
  text: string;
  bytes: number;
  truncated: boolean;
}

/** What a command did in its sandbox: its output and, file by file, what it would change. */
export interface CommandRunPreview {
  kind: 'commandRun';
  command: string;
  cwd: string;
  network: 'none' | 'allowlist';
  exitCode: number | null;
  timedOut: boolean;
  oomKilled: boolean;
  stdout: OutputPreview;
  stderr: OutputPreview;
  files: FileChangePreview[];
  /**
   * Changes the sandbox saw but will not carry back (symlinks, special files, ignored or secret paths).
   * `blocksChangeset`: the entry would land outside the roots, in the data directory or on a secret
   * path, so none of the changeset is ever applied.
   */
  skipped: { path: string; reason: string; blocksChangeset?: boolean }[];
  /** Files of the real workspace that changed while the command ran on their copy. */
  conflicts: string[];
  image: { tag: string; digest: string };
  egress: { method: string; host: string; port: number; allowed: boolean }[];
  /**
   * A dry run's binding: the digest of what it ran on (the files it read, the image, argv, env, cwd,
   * limits, no network) and the blob that holds them with its changeset, so an approval of it can be
   * applied without running the command a second time (see docs/sandbox.md, "What was approved is applied").
   */
  dryRun?: DryRunBinding;
  /** The plan's earlier steps whose writes were laid over the copy before this dry run, in plan order. */
  planBasis?: PlanBasisStep[];
  /** Set when this preview was made again because an earlier step of the plan changed (rejected, edited, failed…). */
  rebuilt?: PreviewRebuilt;
}

/** See CommandRunPreview.dryRun. */
export interface DryRunBinding {
  inputsDigest: string;
  /** Blob (sha256) of the dry run's inputs, the manifest of what it read, and its changeset by content blobs. */
  blob: string;
  runId: string;
  durationMs: number;
}

/** An earlier step of the plan a dry run saw as done: which version of it, and in which state it was then. */
export interface PlanBasisStep {
  stepId: string;
  stepHash: string;
  action: string;
  /** A command: the preview its changeset came from (a new dry run of it is another basis). */
  previewHash?: string;
}

/** Why a preview was made again. */
export interface PreviewRebuilt {
  reason: string;
  /** The earlier step whose change set it off. */
  stepId: string;
  at: string;
}

/** How an approved run was carried out: its approved dry run applied, or run again (and why). Kept in the step's result and its audit record. */
export interface ExecutionChoice {
  appliedDryRun: boolean;
  /** In words, as the CLI and the window show it. */
  summary: string;
  /** Ran again: why the dry run could not be applied. */
  reason?: string;
}

export type Preview =
  | { kind: 'fileChanges'; files: FileChangePreview[] }
  | { kind: 'kbEntry'; title: string; content: string; tags: string[] }
  | { kind: 'text'; text: string }
  | CommandRunPreview
  | {
      kind: 'url';
      url: string;
      protocol: string;
      host: string;
      path: string;
      query: UrlQueryParam[];
      fragment: string | null;
      warnings: string[];
    }
  /** A dry run of code: its result, and the network requests it would have made (not sent). */
  | { kind: 'codeRun'; result: CodeRunResult; requests: { method: string; url: string }[] };

/** One query parameter of a URL a step would open, decoded, flagged when it could smuggle data out. */
export interface UrlQueryParam {
  name: string;
  value: string;
  /** A long value with no readable words (base64, hex, an encoded blob): it could carry data out. */
  opaque: boolean;
}

export interface Approval {
  by: Actor;
  at: string;
  stepHash: string;
  previewHash: string | null;
}

/**
 * The earlier step of its plan that holds a step back, and why (computed when steps are read, never
 * stored): one that ended without running (the plan then waits for the person) or one still undecided.
 */
export interface BlockedBy {
  stepId: string;
  status: StepStatus;
  reason: string;
}

/** A step as stored, with everything the person and the reviewer need to see about it. */
export interface StepRecord {
  step: Step;
  position: number;
  status: StepStatus;
  stepHash: string;
  evaluation: Evaluation | null;
  preview: Preview | null;
  previewHash: string | null;
  /** Why no preview could be made (a project image that did not build, a sandbox that refused): the person decides knowing it. */
  previewError?: string;
  approval: Approval | null;
  rejectedReason: string | null;
  result: Record<string, unknown> | null;
  error: ErrorShape | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  revertedAt: string | null;
  /** After a revert: what it did with the folders the step created (removed, kept and why). */
  revertOutcome?: RevertOutcome;
  /** When its dry run and its real run started and ended, each once it has ended. */
  runTimes?: RunTimes;
  /** Present while an earlier step of the plan holds this one back (see BlockedBy). */
  blockedBy?: BlockedBy;
  /**
   * Present while the step waits for consent or holds an approval not yet used: when it becomes
   * `expired` (policy.consentExpirySeconds, or the plan's shorter consentExpirySeconds).
   */
  consentExpiresAt?: string;
  /** Why the proposer sent the step's plan, as it said it (plan.purpose); absent when it said nothing. */
  planPurpose?: string;
  /** Present once the person changed the step before approving it (per-hunk approval or an edit): what they changed. */
  edit?: PersonEdit;
  /**
   * Present when a large write's content (its backup blob) is missing or damaged (content-lost.ts): the step's
   * `args.content` is then empty, never the real content, and the step can no longer be approved or run.
   */
  contentLost?: ContentLost;
}

/**
 * The person's change to a proposed step: the step as it is now is their version; the proposer's
 * (the superseded proposal) is kept as `proposedStepHash` here and in full in the audit log.
 */
export interface PersonEdit {
  /** `hunks`: approved with only some hunks of a write; `content`: a write's content edited; `command`: a command line edited. */
  kind: 'hunks' | 'content' | 'command';
  by: Actor;
  at: string;
  /** 2 after the first change to the proposal, 3 after the next. */
  version: number;
  /** The hash of the step as proposed (the first proposal, before any of the person's changes). */
  proposedStepHash: string;
  /** kind `hunks`: the hunk numbers (from 1) the person accepted, of `total`. */
  hunks?: { accepted: number[]; total: number };
  /** Writes: sha256 of the content as proposed and as the person approved or edited it. */
  proposedContentHash?: string;
  approvedContentHash?: string;
  /** Writes: unified diff from the proposed content to the person's (null when too large to diff). */
  diff?: string | null;
  /** Commands: the command line as proposed and as the person edited it. */
  commandBefore?: string;
  commandAfter?: string;
}

/** One run of a step, as timed by the host (wall clock): it `finished`, `failed` to run, was `cancelled`, or was `interrupted` (the host shut down mid-run). */
export interface RunSpan {
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  ended: 'finished' | 'failed' | 'cancelled' | 'interrupted';
  /** A run that did not finish: the output it printed before it stopped, as the live tail kept it (a finished run's output is its result's). */
  output?: KeptRunOutput;
}

/** The tail of a run's output as the host kept it (the last LIVE_TAIL_BYTES / LIVE_TAIL_LINES), by stream, and how much it printed in all. */
export interface KeptRunOutput {
  stdout: string;
  stderr: string;
  bytes: { stdout: number; stderr: number };
  /** Set when it printed more than was kept: only the last part is here. */
  truncated: boolean;
  /**
   * The same kept tail in the order it came, stdout and stderr interleaved (a warning between two
   * lines stays between them); records from before it was kept lack it.
   */
  inOrder?: { stream: 'stdout' | 'stderr'; text: string }[];
}

/** A step's dry run (the preview being prepared) and its real run (from the sandbox run to the last applied change). */
export interface RunTimes {
  dryRun?: RunSpan;
  realRun?: RunSpan;
}

/** What a revert did beyond putting the files back. */
export interface RevertOutcome {
  /** The folders the step created, deepest first. */
  directories: DirectoryRevertOutcome[];
}

/** The rejection reason of a step its own agent withdrew: surfaces tell it apart from the person's no by it. */
export const AGENT_CANCEL_REASON = 'cancelled by the agent that proposed it';

/** The first line of why a step has no preview, or null when it has one or nothing went wrong. */
export function noPreviewWhy(record: StepRecord): string | null {
  if (record.preview || !record.previewError) return null;
  return record.previewError.split('\n', 1)[0]!.trim() || null;
}
