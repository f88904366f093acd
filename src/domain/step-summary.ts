import type { ContentLost } from './content-lost.js';
import type { Actor } from './actor.js';
import { codeExcerptOf, type CodeExcerpt } from './code-excerpt.js';
import type { ErrorShape } from './errors.js';
import { filesChangedOf, oneLine, resultWords, type ResultSource } from './result-words.js';
import type { StepStatus } from './state-machine.js';
import type { Step } from './step.js';
import { summarizeStep } from './step-title.js';

/*
 * A step as a row of a list shows it, and nothing more: the window's queue and History page through
 * these (listStepSummaries) and fetch a step's whole record (getStep) only when a row is opened.
 * Every string is bounded, so a page of 200 stays well under 64 KiB whatever the agents sent.
 */

/** The longest title a summary carries (a long command line is cut, saying how much more there is). */
export const SUMMARY_TITLE_MAX_CHARACTERS = 240;
/** The longest purpose a summary carries. */
export const SUMMARY_PURPOSE_MAX_CHARACTERS = 160;
/** The longest agent label a summary carries. */
export const SUMMARY_AGENT_MAX_CHARACTERS = 80;
/** The longest reason a summary gives for what holds a step back. */
export const SUMMARY_BLOCKED_REASON_MAX_CHARACTERS = 240;

export interface StepSummary {
  id: string;
  planId: string;
  position: number;
  action: string;
  /** The step in words, as the queue and History title it ("Run npm test", "Write notes/a.md"). */
  title: string;
  /** Why, as the proposer said it; null when it said nothing. */
  purpose: string | null;
  /** Who proposed it: the person, or an agent by the label its client gave (a label only). */
  origin: 'user' | 'agent';
  agent: string | null;
  risk: string | null;
  status: StepStatus;
  /** Whether Executor can undo what it did (the action and its evaluation say so). */
  reversible: boolean;
  /** Who approved, in words ("policy", "alice via web"); null when nobody did. */
  approvedBy: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  revertedAt: string | null;
  /** How long its real run went, by the host's timing (RunTimes.realRun): the one duration a row says, a cancel's too. */
  ranMs?: number;
  /** What it came to, in words (result-words.ts). */
  result: string;
  /** How many files its run changed, where that is known. */
  filesChanged: number | null;
  errorCode: string | null;
  /** The earlier step of its plan that holds it back, and why (cut to SUMMARY_BLOCKED_REASON_MAX_CHARACTERS). */
  blockedBy?: { stepId: string; status: StepStatus; reason?: string };
  consentExpiresAt?: string;
  /** A runCode step's first lines: the queue's row shows what runs. */
  codeExcerpt?: CodeExcerpt;
  /** Why the proposer sent the step's plan (cut to SUMMARY_PURPOSE_MAX_CHARACTERS); absent when it said nothing. */
  planPurpose?: string;
  /** The file a write or a delete changes, as the step names it: the queue links steps that change the same file. */
  targetPath?: string;
  /** Present when a large write's content (its backup blob) is missing or damaged: it can no longer be approved or run (content-lost.ts). */
  contentLost?: ContentLost;
}

/** The parts of a step record a summary is made from. The repository reads only these, never a preview or an output. */
export interface SummarySource {
  step: Pick<Step, 'id' | 'planId' | 'action' | 'args' | 'meta'>;
  position: number;
  status: StepStatus;
  evaluation: { risk: string; reasons: string[]; reversible?: boolean; approvedByRules?: string[] } | null;
  approval: { by: Actor } | null;
  rejectedReason: string | null;
  result: Record<string, unknown> | null;
  error: ErrorShape | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  revertedAt: string | null;
  /** The host's timing of the real run, where it ran (the one duration the words say). */
  runTimes?: ResultSource['runTimes'];
  blockedBy?: { stepId: string; status: StepStatus; reason?: string };
  consentExpiresAt?: string;
  /** A listing's excerpt of a runCode step's code, read without its whole text (the step's args then lack the code). */
  codeExcerpt?: CodeExcerpt;
  /** Why its plan was proposed (the plan's purpose), when the proposer said. */
  planPurpose?: string;
  contentLost?: ContentLost;
}

/** Actions whose effects Executor can put back (the action modules' `reversible`, said here for the domain). */
const REVERSIBLE_ACTIONS = new Set(['writeFile', 'deleteFile', 'runCommand']);

function approverWords(by: Actor | undefined, rules: readonly string[] = []): string | null {
  if (!by) return null;
  // A remembered rule is named where it approved, as in the record's detail (renderer approverText).
  if (by.channel === 'policy' && rules.length > 0)
    return oneLine(
      `your remembered rule${rules.length === 1 ? '' : 's'} ${rules.join(', ')} (without asking)`,
      SUMMARY_AGENT_MAX_CHARACTERS,
    );
  // A skill's use: its pin, given by the person's approval of the skill (approval.by.client names it).
  if (by.channel === 'policy' && by.client?.startsWith('skill '))
    return oneLine(`${by.client} (its approved pin, without asking)`, SUMMARY_AGENT_MAX_CHARACTERS);
  if (by.channel === 'policy') return 'policy';
  return oneLine(`${by.user} via ${by.channel}`, SUMMARY_AGENT_MAX_CHARACTERS);
}

function blockedWords(blockedBy: NonNullable<SummarySource['blockedBy']>): NonNullable<StepSummary['blockedBy']> {
  const { stepId, status, reason } = blockedBy;
  return reason === undefined ? { stepId, status } : { stepId, status, reason: oneLine(reason, SUMMARY_BLOCKED_REASON_MAX_CHARACTERS) };
}

function excerptOf(source: SummarySource): { codeExcerpt?: CodeExcerpt } {
  if (source.step.action !== 'runCode') return {};
  if (source.codeExcerpt) return { codeExcerpt: source.codeExcerpt };
  const code = (source.step.args as { code?: unknown }).code;
  return typeof code === 'string' ? { codeExcerpt: codeExcerptOf(code) } : {};
}

/** The file a write or a delete names (bounded like a title): steps naming the same file are linked in the queue. */
function targetOf(step: SummarySource['step']): { targetPath?: string } {
  if (step.action !== 'writeFile' && step.action !== 'deleteFile') return {};
  const target = (step.args as { path?: unknown }).path;
  return typeof target === 'string' ? { targetPath: oneLine(target, SUMMARY_TITLE_MAX_CHARACTERS) } : {};
}

/** The summary of a step. `roots`: the workspace roots, so paths read relative to them. */
export function toStepSummary(source: SummarySource, roots: readonly string[] = []): StepSummary {
  const { step } = source;
  let title: string;
  try {
    title = summarizeStep(step as Step, roots);
  } catch {
    // A record from a newer host, or args this host no longer reads: the action's name still says something.
    title = step.action;
  }
  const result = resultWords({ ...source, step });
  return {
    id: step.id,
    planId: step.planId,
    position: source.position,
    action: step.action,
    title: oneLine(title, SUMMARY_TITLE_MAX_CHARACTERS),
    purpose: step.meta.purpose ? oneLine(step.meta.purpose, SUMMARY_PURPOSE_MAX_CHARACTERS) : null,
    origin: step.meta.origin,
    agent: step.meta.origin === 'agent' ? oneLine(step.meta.client ?? 'unnamed agent', SUMMARY_AGENT_MAX_CHARACTERS) : null,
    risk: source.evaluation?.risk ?? null,
    status: source.status,
    reversible: REVERSIBLE_ACTIONS.has(step.action) && source.evaluation?.reversible !== false,
    approvedBy: approverWords(source.approval?.by, source.evaluation?.approvedByRules),
    createdAt: source.createdAt,
    updatedAt: source.updatedAt,
    startedAt: source.startedAt,
    finishedAt: source.finishedAt,
    revertedAt: source.revertedAt,
    ...(source.runTimes?.realRun ? { ranMs: source.runTimes.realRun.durationMs } : {}),
    result,
    filesChanged: filesChangedOf({ step, result: source.result }),
    errorCode: source.error?.code ?? null,
    ...(source.blockedBy ? { blockedBy: blockedWords(source.blockedBy) } : {}),
    ...(source.consentExpiresAt ? { consentExpiresAt: source.consentExpiresAt } : {}),
    ...excerptOf(source),
    ...(source.planPurpose ? { planPurpose: oneLine(source.planPurpose, SUMMARY_PURPOSE_MAX_CHARACTERS) } : {}),
    ...targetOf(step),
    ...(source.contentLost ? { contentLost: source.contentLost } : {}),
  };
}
