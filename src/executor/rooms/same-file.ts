import fs from 'node:fs';
import { PENDING, type StepDesk } from '../step-desk.js';
import type { StepRecord } from '../../domain/step-record.js';
import { mergeOverRan } from '../../domain/three-way-merge.js';
import { guardPath } from '../../policy/path-guard.js';

/** A step that changes the same file, as the window names it. */
export interface SameFileStep {
  stepId: string;
  status: StepRecord['status'];
  purpose: string | null;
  planPurpose: string | null;
  agent: string | null;
  finishedAt: string | null;
}

/**
 * What other steps do to the file a waiting write changes: the ones still waiting that change it too,
 * and the ones that ran on it since this step was proposed, each with what approving this write as
 * it stands does to their change (keeps it, undoes it, or can keep it through a merge).
 */
export interface SameFileReport {
  path: string;
  waiting: SameFileStep[];
  ran: (SameFileStep & { approving: 'keeps' | 'undoes' | 'merges'; why?: string })[];
  /** This write's change applied on top of the file as it is now (every step that ran on it kept), when both are line edits on lines apart. */
  merged: string | null;
}

/** How many steps, newest first, are looked through for ones that ran on the same file. */
const RAN_LOOKBACK = 200;

function named(record: StepRecord): SameFileStep {
  return {
    stepId: record.step.id,
    status: record.status,
    purpose: record.step.meta.purpose ?? null,
    planPurpose: record.planPurpose ?? null,
    agent: record.step.meta.origin === 'agent' ? (record.step.meta.client ?? 'unnamed agent') : null,
    finishedAt: record.finishedAt,
  };
}

function textOf(record: StepRecord): string | null {
  if (record.step.action !== 'writeFile' || record.step.args.encoding === 'base64') return null;
  return record.step.args.content;
}

/** The report for a write or delete that has not run yet; null for any other step (or one whose path leaves the roots). */
export function sameFileReport(desk: StepDesk, record: StepRecord): SameFileReport | null {
  if (record.step.action !== 'writeFile' && record.step.action !== 'deleteFile') return null;
  const roots = desk.policy.workspaceRoots;
  const where = (requested: string) => {
    const verdict = guardPath(requested, roots, desk.dataDir);
    return verdict.ok ? verdict.realPath : null;
  };
  const target = where(record.step.args.path);
  if (!target) return null;
  const touchesTarget = (other: StepRecord) =>
    other.step.id !== record.step.id &&
    (other.step.action === 'writeFile' || other.step.action === 'deleteFile') &&
    where(other.step.args.path) === target;
  const waiting = desk.steps
    .list({ status: [...PENDING], limit: 1000 })
    .filter(touchesTarget)
    .map(named);
  let current: string | null = null;
  try {
    current = fs.readFileSync(target, 'utf8');
  } catch {
    current = null;
  }
  const mine = textOf(record);
  const ran: SameFileReport['ran'] = [];
  let merged: string | null = null;
  for (const other of desk.steps.list({ status: ['executed'], limit: RAN_LOOKBACK })) {
    if (!touchesTarget(other) || !other.finishedAt || other.finishedAt <= record.createdAt) continue;
    const backup = desk.steps.backups(other.step.id).find((entry) => entry.path === target);
    if (mine === null || current === null || !backup?.diff) {
      // A delete, binary content or a file now gone: whatever ran is replaced whole by this step.
      ran.push({ ...named(other), approving: 'undoes', why: 'this step replaces the whole file' });
      continue;
    }
    const outcome = mergeOverRan(current, merged ?? mine, backup.diff);
    if (outcome.kind === 'keeps') ran.push({ ...named(other), approving: 'keeps' });
    else if (outcome.kind === 'merged') {
      merged = outcome.merged;
      ran.push({ ...named(other), approving: 'merges' });
    } else ran.push({ ...named(other), approving: 'undoes', why: outcome.why });
  }
  if (ran.some((entry) => entry.approving === 'undoes')) merged = null;
  return { path: target, waiting, ran, merged };
}
