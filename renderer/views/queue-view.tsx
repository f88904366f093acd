import { useEffect, useMemo, useRef, useState } from 'react';
import {
  describeProposer,
  describeRule,
  expiryFor,
  proposerOf,
  ruleChoicesForStep,
  RULE_LIFETIME_NAMES,
  RULE_LIFETIMES,
  type RuleChoice,
  type RuleLifetime,
} from '../../src/domain/remembered-rule.js';
import { riskRank, type Risk } from '../../src/domain/risk.js';
import { commandLineOf } from '../../src/domain/shell-quote.js';
import { PLAN_BREAKING_STATUSES, WITHDRAWABLE_STATUSES } from '../../src/domain/state-machine.js';
import { noPreviewWhy, type StepRecord } from '../../src/domain/step-record.js';
import { CONTENT_LOST_LABEL } from '../../src/domain/content-lost.js';
import { ContentLostNote } from '../components/content-lost-note.js';
import type { StepSummary } from '../../src/domain/step-summary.js';
import type { PresignedCall } from '../../src/ipc/client/client.js';
import { useApi, useRoots, type PolicyValue as Policy } from '../api.js';
import { CodeExcerpt, WhatRuns } from '../components/code-view.js';
import { Dialog } from '../components/dialog.js';
import { ErrorBox } from '../components/error-box.js';
import { LiveRunsPanel, rowYieldsToRun, useLiveRuns } from '../components/live-runs.js';
import { InvisibleWarning, MarkedText, markedPlainText } from '../components/marked-text.js';
import { ReasonText } from '../components/reason-text.js';
import { PreviewPanel } from '../components/preview-panel.js';
import { StoppedRunOutput } from '../components/stopped-run-output.js';
import { HELD_FOR_DISK, useHeldPlans } from '../components/storage-hold.js';
import { RepetitionHint } from '../components/repetition-hint.js';
import { RiskBadge } from '../components/risk-badge.js';
import { SameFileNotice } from '../components/same-file-notice.js';
import { choosableHunks, StepChanges } from '../components/step-changes.js';
import { useKeys } from '../keys.js';
import { UndoToasts, useFadingMessage } from '../components/toasts.js';
import { approvalOutcomeText, formatTime, quotedStep, summarizeStep, targetPath } from '../step-text.js';
import { useUndoableDecisions } from '../undoable-decisions.js';
import { queueStepFromHash } from '../runs/step-links.js';
import { ProposedByRun, runIdOfLabel } from '../runs/run-of-step.js';
import { cutOf, DETAIL_RECORD_BYTES, kibText, type ShownRecord } from '../whole-step.js';
import { loadWholeStep } from '../../src/ipc/client/whole-step-record.js';

/** A plan's waiting steps as the list shows them (summaries: the list never holds a step's record). */
interface PlanGroup {
  planId: string;
  /** Why the proposer sent the plan, when it said: the plan's name in the queue. */
  purpose: string | null;
  steps: StepSummary[];
  newest: string;
}

/** A plan's waiting steps with their records, fetched when the person asks to approve the whole plan. */
interface PlanRecords {
  planId: string;
  steps: StepRecord[];
}

/** Newest plan first; inside a plan, the order it runs in. */
export function groupByPlan(summaries: StepSummary[]): PlanGroup[] {
  const groups = new Map<string, PlanGroup>();
  for (const summary of summaries) {
    const group = groups.get(summary.planId) ?? {
      planId: summary.planId,
      purpose: summary.planPurpose ?? null,
      steps: [],
      newest: summary.createdAt,
    };
    group.steps.push(summary);
    if (summary.createdAt > group.newest) group.newest = summary.createdAt;
    groups.set(summary.planId, group);
  }
  const sorted = [...groups.values()].sort((left, right) => (left.newest < right.newest ? 1 : left.newest > right.newest ? -1 : 0));
  for (const group of sorted) group.steps.sort((left, right) => left.position - right.position);
  return sorted;
}

function canApprove(record: StepRecord): boolean {
  return (
    record.status === 'awaiting_consent' &&
    record.evaluation?.allowed !== false &&
    record.evaluation?.risk !== 'CRITICAL' &&
    record.contentLost === undefined
  );
}

/** Whether a listed step may be approved with its whole plan: waiting for the person, MEDIUM or lower (the records say the rest when fetched). */
function approvableWithPlan(summary: StepSummary): boolean {
  return (
    summary.status === 'awaiting_consent' &&
    summary.risk !== null &&
    riskRank(summary.risk as Risk) <= riskRank('MEDIUM') &&
    summary.contentLost === undefined
  );
}

/** Every step that has not started can be rejected: waiting for the person, being prepared, or approved and waiting its turn. */
function canReject(record: StepRecord): boolean {
  return WITHDRAWABLE_STATUSES.includes(record.status);
}

/** What a step in the queue waits for, when it is not simply the person's decision on it (a summary or a record says it alike). */
export function queueStateText(
  step: Pick<StepSummary, 'status' | 'blockedBy' | 'contentLost'> & { planId?: string },
  heldPlans: ReadonlySet<string> = new Set(),
): string | null {
  // First: whatever else holds it, it can never be approved (content-lost.ts).
  if (step.contentLost) return `${CONTENT_LOST_LABEL}: it can no longer be approved or run; reject it`;
  const reason = step.blockedBy?.reason ?? (step.blockedBy ? `step ${step.blockedBy.stepId} is ${step.blockedBy.status}.` : undefined);
  // An approved step of a plan held for the disk waits for room, whichever step of it is held: "runs first" would be untrue.
  if (step.status === 'approved' && step.planId !== undefined && heldPlans.has(step.planId)) return `Approved; waits: ${HELD_FOR_DISK}`;
  if (step.status === 'approved') return reason ? `Approved; waits: ${reason}` : 'Approved; runs next';
  if (step.status === 'proposed' || step.status === 'evaluated') return 'Preparing preview';
  if (step.blockedBy && PLAN_BREAKING_STATUSES.includes(step.blockedBy.status)) return `Plan stopped: ${reason}`;
  return null;
}

/** The one word for a listed step's state (a row's `data-state`): what its row says, or waits for you. */
export function queueStateWord(
  step: Pick<StepSummary, 'status' | 'blockedBy' | 'contentLost'>,
): 'approved' | 'preparing' | 'stopped' | 'waiting' | 'content-lost' {
  if (step.contentLost) return 'content-lost';
  if (step.status === 'approved') return 'approved';
  if (isPreparing(step)) return 'preparing';
  if (step.blockedBy && PLAN_BREAKING_STATUSES.includes(step.blockedBy.status)) return 'stopped';
  return 'waiting';
}

/** Stored and weighed, its dry run still under way on the host: shown at once, decided once the preview is in. */
export function isPreparing(step: { status: StepRecord['status'] }): boolean {
  return step.status === 'proposed' || step.status === 'evaluated';
}

/** "12 s", "3 min 5 s": how long a preview has been in preparation. */
export function elapsedText(sinceIso: string, now: number): string {
  const seconds = Math.max(0, Math.floor((now - Date.parse(sinceIso)) / 1000));
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** The current time, ticking once a second while `ticking` (a preview is in preparation), still otherwise. */
function useNow(ticking: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!ticking) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [ticking]);
  return now;
}

function PreparingNote({ stepId, since, now }: { stepId: string; since: string; now: number }) {
  return (
    <span className="preparing progress" data-testid={`preparing-${stepId}`}>
      Preparing preview… {elapsedText(since, now)}
    </span>
  );
}

/**
 * Rules a person may remember for this step: the core's own list (ruleChoicesForStep), which is
 * also the only list approveAndRemember accepts. None for CRITICAL steps, none for wrappers and
 * interpreters, none when the step's agent cannot be told apart from others.
 */
export function ruleChoicesFor(record: StepRecord, policy: Policy | undefined): RuleChoice[] {
  if (!policy) return [];
  return ruleChoicesForStep(record, policy.workspaceRoots);
}

/** The part of a write the person approves: the hunks still checked, of all the write's hunks. */
interface HunkPart {
  accepted: number[];
  total: number;
}

/** The hunks the person unticked, per step, for the preview they were ticked on: a new preview starts whole again. */
type HunkChoices = ReadonlyMap<string, { previewHash: string | null; off: ReadonlySet<number> }>;

const NO_HUNKS_OFF: ReadonlySet<number> = new Set();

function hunksOffFor(choices: HunkChoices, record: StepRecord): ReadonlySet<number> {
  const choice = choices.get(record.step.id);
  return choice && choice.previewHash === record.previewHash ? choice.off : NO_HUNKS_OFF;
}

/**
 * What Approve approves: null for the whole step (every hunk checked, or none to choose), else the
 * checked hunks. The one Approve (button and `a` key) writes exactly this; none checked refuses.
 */
export function hunkPartOf(record: StepRecord, off: ReadonlySet<number>): HunkPart | null {
  if (off.size === 0) return null;
  const hunks = choosableHunks(record);
  if (!hunks) return null;
  const accepted = hunks.map((hunk) => hunk.number).filter((number) => !off.has(number));
  return accepted.length === hunks.length ? null : { accepted, total: hunks.length };
}

/** "hunks 1 and 3 of 4", "hunk 2 of 2". */
export function hunkPartWords(part: HunkPart): string {
  const list =
    part.accepted.length <= 1 ? String(part.accepted[0] ?? '') : `${part.accepted.slice(0, -1).join(', ')} and ${part.accepted.at(-1)}`;
  return `hunk${part.accepted.length === 1 ? '' : 's'} ${list} of ${part.total}`;
}

const NO_HUNK_CHECKED =
  'No hunk of this write is checked, so approving would leave the file as it is: check the hunks to write, or reject the step.';

type Pending =
  | { kind: 'confirmHigh'; record: StepRecord; part: HunkPart | null }
  | { kind: 'reject'; record: StepRecord }
  | { kind: 'remember'; record: StepRecord }
  | { kind: 'approvePlan'; group: PlanRecords };

export function QueueView({
  waiting: listed,
  hasMore = false,
  onMore,
  policy,
  active,
}: {
  waiting: StepSummary[];
  hasMore?: boolean;
  onMore?: () => void;
  policy: Policy | undefined;
  active: boolean;
}) {
  const roots = useRoots();
  const api = useApi();
  const heldPlans = useHeldPlans();
  // A decision is held a few seconds with an Undo before it is sent; its steps leave the queue meanwhile.
  const decisions = useUndoableDecisions();
  // One state per step: a step whose real run is under way (or began after its row's summary) is its
  // "Running" card, not also a row saying it was approved.
  const live = useLiveRuns();
  const waiting = useMemo(() => {
    const held = new Set(decisions.held.flatMap((decision) => decision.stepIds));
    return listed.filter((summary) => !held.has(summary.id) && !rowYieldsToRun(summary, live));
  }, [listed, decisions.held, live]);
  const groups = useMemo(() => groupByPlan(waiting), [waiting]);
  // Steps in the list that change the same file (as they name it): each row says so, and the detail says what it means.
  const sharedPaths = useMemo(() => {
    const counts = new Map<string, number>();
    for (const summary of waiting) if (summary.targetPath) counts.set(summary.targetPath, (counts.get(summary.targetPath) ?? 0) + 1);
    return new Set([...counts].filter(([, count]) => count > 1).map(([target]) => target));
  }, [waiting]);
  const ordered = useMemo(() => groups.flatMap((group) => group.steps), [groups]);
  // A link to a step (a run's page: "Go to the step in the queue") names it in the address: #queue?step=ID.
  const [selectedId, setSelectedId] = useState<string | null>(() => queueStepFromHash(location.hash));
  useEffect(() => {
    const onHash = () => {
      const linked = queueStepFromHash(location.hash);
      if (!linked) return;
      setSelectedId(linked);
      requestAnimationFrame(() => document.getElementById(`queue-item-${linked}`)?.scrollIntoView({ block: 'nearest' }));
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const [pending, setPending] = useState<Pending | null>(null);
  const [hunkChoices, setHunkChoices] = useState<HunkChoices>(new Map());
  const partFor = (record: StepRecord) => hunkPartOf(record, hunksOffFor(hunkChoices, record));
  // What is under way, per plan: a long run in one plan never holds up a decision on another.
  const [busyPlans, setBusyPlans] = useState<ReadonlyMap<string, string>>(new Map());
  const busyFor = (planId: string) => busyPlans.has(planId);
  const now = useNow(ordered.some(isPreparing));
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useFadingMessage();

  const listedSelected = ordered.find((summary) => summary.id === selectedId) ?? ordered[0] ?? null;
  // The list holds summaries only: the step shown in detail is its record, fetched now (cut at
  // DETAIL_RECORD_BYTES, whole on request), and again whenever its summary says it changed.
  const [detail, setDetail] = useState<ShownRecord | null>(null);
  const [detailError, setDetailError] = useState<unknown>(null);
  const [wholeError, setWholeError] = useState<unknown>(null);
  const [loadingWhole, setLoadingWhole] = useState(false);
  useEffect(() => {
    setWholeError(null);
    setDetailError(null);
    if (!listedSelected) return;
    let alive = true;
    api.getStep({ stepId: listedSelected.id, maxBytes: DETAIL_RECORD_BYTES }).then(
      (record) =>
        alive &&
        setDetail((previous) =>
          previous && previous.step.id === record.step.id && previous.updatedAt === record.updatedAt && !cutOf(previous)
            ? previous
            : record,
        ),
      (caught: unknown) => alive && setDetailError(caught),
    );
    return () => {
      alive = false;
    };
  }, [api, listedSelected?.id, listedSelected?.updatedAt]);
  // Until the record of a newly selected step is in, its row's summary stands in (no decision can be taken on it).
  const selected: StepRecord | null = listedSelected && detail && detail.step.id === listedSelected.id ? detail : null;
  const selectedCut = selected ? cutOf(selected) : undefined;
  const showWhole = (stepId: string) => {
    setLoadingWhole(true);
    setWholeError(null);
    loadWholeStep(api, stepId)
      .then(
        (record) => setDetail(record),
        (caught: unknown) => setWholeError(caught),
      )
      .finally(() => setLoadingWhole(false));
  };
  useEffect(() => {
    if (!selectedId && ordered[0]) setSelectedId(ordered[0].id);
  }, [ordered, selectedId]);

  const move = (delta: number) => {
    if (ordered.length === 0) return;
    const index = Math.max(
      0,
      ordered.findIndex((summary) => summary.id === listedSelected?.id),
    );
    const next = ordered[Math.min(ordered.length - 1, Math.max(0, index + delta))]!;
    setSelectedId(next.id);
    document.getElementById(`queue-item-${next.id}`)?.focus();
  };

  /** Approving a whole plan shows each step's code and binds each approval to its preview: their records are fetched now. */
  const startApprovePlan = (group: PlanGroup) => {
    setError(null);
    // Approving a plan approves each step whole: a step with hunks unticked is approved on its own, so nothing unchecked is written.
    const partial = group.steps.find((summary) => (hunkChoices.get(summary.id)?.off.size ?? 0) > 0);
    if (partial) {
      setNotice(
        `Some hunks of step ${partial.id} are unchecked: approve that step on its own (Approve writes only the checked hunks), then the rest.`,
      );
      return;
    }
    Promise.all(group.steps.map((summary) => api.getStep({ stepId: summary.id, maxBytes: DETAIL_RECORD_BYTES }))).then(
      (records) => {
        if (records.every(canApprove)) setPending({ kind: 'approvePlan', group: { planId: group.planId, steps: records } });
        else setNotice('A step of this plan changed meanwhile; approve its steps one by one.');
      },
      (caught: unknown) => setError(caught),
    );
  };

  const run = async (planId: string, label: string, action: () => Promise<string>) => {
    setBusyPlans((previous) => new Map(previous).set(planId, label));
    setError(null);
    try {
      setNotice(await action());
    } catch (caught) {
      setError(caught);
    } finally {
      setBusyPlans((previous) => {
        const next = new Map(previous);
        next.delete(planId);
        return next;
      });
    }
  };

  const approve = (record: StepRecord, remember?: { choice: RuleChoice; lifetime: RuleLifetime }, part: HunkPart | null = null) =>
    hold(
      [record],
      `Approving ${part ? `${hunkPartWords(part)} of ` : ''}${quotedStep(record.step, roots)}`,
      () => sendApproval(record, remember, part),
      (presign) => {
        const shown = record.previewHash ? { previewHash: record.previewHash } : {};
        return [
          remember
            ? presign('approveAndRemember', { stepId: record.step.id, ...shown, rule: remember.choice.draft, lifetime: remember.lifetime })
            : presign('approve', { stepId: record.step.id, ...shown, ...(part ? { hunks: part.accepted } : {}) }),
        ];
      },
    );

  /**
   * Holds a decision with an Undo; sends it when the toast runs out (or the window closes).
   * `calls` signs the same host calls `send` makes, now, so a page that goes away sends them in that moment.
   */
  const hold = (
    records: StepRecord[],
    words: string,
    send: () => Promise<void>,
    calls: (presign: NonNullable<typeof api.presign>) => Promise<PresignedCall | null>[],
  ) => {
    const presign = api.presign?.bind(api);
    decisions.hold({
      stepIds: records.map((record) => record.step.id),
      words,
      send,
      ...(presign
        ? {
            presign: async () => {
              const signed = await Promise.all(calls(presign));
              return signed.every((call): call is PresignedCall => call !== null) ? signed : null;
            },
          }
        : {}),
    });
    setSelectedId(null);
  };
  const undo = (key: string) => {
    const taken = decisions.undo(key);
    if (!taken) return;
    setSelectedId(taken.stepIds[0] ?? null);
    setNotice(
      `${taken.words.replace(/^(Approving|Rejecting)/, (verb) => (verb === 'Approving' ? 'Approval of' : 'Rejection of'))} undone; nothing was sent.`,
    );
  };

  const sendApproval = (record: StepRecord, remember?: { choice: RuleChoice; lifetime: RuleLifetime }, part: HunkPart | null = null) =>
    run(record.step.planId, `Approving ${quotedStep(record.step, roots)}…`, async () => {
      const shown = record.previewHash ? { previewHash: record.previewHash } : {};
      // With a rule, the approval and the rule are saved together by the core, or neither is.
      const result = remember
        ? (await api.approveAndRemember({ stepId: record.step.id, ...shown, rule: remember.choice.draft, lifetime: remember.lifetime }))
            .step
        : await api.approve({ stepId: record.step.id, ...shown, ...(part ? { hunks: part.accepted } : {}) });
      setSelectedId(null);
      return `${approvalOutcomeText(record.step, result, roots)}${part ? ` Only ${hunkPartWords(part)} were approved.` : ''}${remember ? ' The rule was saved; see Settings.' : ''}`;
    });

  const startApprove = (record: StepRecord | null) => {
    if (!record || !canApprove(record) || busyFor(record.step.planId)) return;
    const part = partFor(record);
    // Every unchecked hunk stays unwritten; with none checked there is nothing to approve.
    if (part && part.accepted.length === 0) {
      setNotice(NO_HUNK_CHECKED);
      return;
    }
    if (record.evaluation?.risk === 'HIGH') setPending({ kind: 'confirmHigh', record, part });
    else void approve(record, undefined, part);
  };
  const startReject = (record: StepRecord | null) => {
    if (!record || !canReject(record) || busyFor(record.step.planId)) return;
    setPending({ kind: 'reject', record });
  };

  useKeys(
    {
      j: () => move(1),
      k: () => move(-1),
      a: () => startApprove(selected),
      r: () => startReject(selected),
      u: () => {
        const latest = decisions.held[decisions.held.length - 1];
        if (latest) undo(latest.key);
      },
      Enter: () => document.getElementById('step-detail')?.focus(),
    },
    active && pending === null,
  );

  return (
    <div className="split">
      <section className="list-pane" aria-label="Steps waiting for consent">
        <header className="pane-head">
          <h1>Queue</h1>
          <span className="muted">
            {waiting.length === 0 ? 'Nothing waiting' : `${waiting.length}${hasMore ? '+' : ''} waiting`}
            {ordered.some(isPreparing) ? ` · ${ordered.filter(isPreparing).length} preparing` : ''}
          </span>
        </header>
        <LiveRunsPanel runs={live.runs} />
        {groups.length === 0 ? (
          <div className="empty">
            <p>No step is waiting for your consent.</p>
            <p className="muted">New proposals appear here as soon as an agent or the CLI sends them.</p>
          </div>
        ) : (
          groups.map((group) => {
            const planApprovable = group.steps.length > 1 && group.steps.every(approvableWithPlan);
            return (
              <section
                key={group.planId}
                className="plan-group"
                aria-label={group.purpose ? `Plan: ${markedPlainText(group.purpose)}` : `Plan ${markedPlainText(group.planId)}`}
              >
                <header className="plan-head">
                  {group.purpose ? (
                    // The proposer's words name the plan; its id stays for copying and for the CLI.
                    <span className="plan-id plan-purpose-head" title={`Plan ${markedPlainText(group.planId)}`} data-testid="plan-purpose">
                      <span className="plan-purpose">
                        <MarkedText text={group.purpose} />
                      </span>
                      <code className="plan-id-small">
                        <MarkedText text={group.planId} />
                      </code>
                    </span>
                  ) : (
                    <span className="plan-id" title="Plan">
                      Plan{' '}
                      <code>
                        <MarkedText text={group.planId} />
                      </code>
                    </span>
                  )}
                  {planApprovable ? (
                    <button type="button" className="small" disabled={busyFor(group.planId)} onClick={() => startApprovePlan(group)}>
                      Approve plan ({group.steps.length})
                    </button>
                  ) : null}
                </header>
                <ul className="item-list">
                  {group.steps.map((summary) => (
                    <li key={summary.id}>
                      <button
                        type="button"
                        id={`queue-item-${summary.id}`}
                        className={`item ${summary.id === listedSelected?.id ? 'selected' : ''}`}
                        aria-current={summary.id === listedSelected?.id ? 'true' : undefined}
                        onClick={() => setSelectedId(summary.id)}
                        data-state-of={summary.id}
                        data-state={queueStateWord(summary)}
                      >
                        <RiskBadge risk={summary.risk as Risk | null} />
                        <span className="item-text">
                          <span className="item-title">
                            <MarkedText text={summary.title} />
                          </span>
                          {summary.codeExcerpt ? <CodeExcerpt excerpt={summary.codeExcerpt} /> : null}
                          <span className="item-sub">{summary.purpose ? <MarkedText text={summary.purpose} /> : 'No purpose given'}</span>
                          {runIdOfLabel(summary.agent) ? (
                            <span className="item-sub" data-testid="queue-item-run">
                              From <MarkedText text={summary.agent!} />
                            </span>
                          ) : null}
                          {summary.targetPath && sharedPaths.has(summary.targetPath) ? (
                            <span className="item-sub same-file-mark" data-testid={`same-file-mark-${summary.id}`}>
                              ⇄ Another waiting step changes this file too
                            </span>
                          ) : null}
                          {isPreparing(summary) ? <PreparingNote stepId={summary.id} since={summary.createdAt} now={now} /> : null}
                          {queueStateText(summary, heldPlans) && !isPreparing(summary) ? (
                            <span className="item-sub item-state">
                              <MarkedText text={queueStateText(summary, heldPlans)!} />
                            </span>
                          ) : null}
                        </span>
                      </button>
                    </li>
                  ))}
                </ul>
              </section>
            );
          })
        )}
        {hasMore && onMore ? (
          <p className="list-more">
            <button type="button" onClick={onMore}>
              Show more waiting steps
            </button>
          </p>
        ) : null}
      </section>
      <section className="detail-pane" id="step-detail" tabIndex={-1} aria-label="Selected step">
        <div className="status-line" role="status" aria-live="polite">
          {busyPlans.size > 0 ? <span className="progress">{[...busyPlans.values()].join(' ')}</span> : notice}
        </div>
        <ErrorBox error={error} onDismiss={() => setError(null)} />
        <UndoToasts
          held={decisions.held}
          onUndo={undo}
          onSendNow={decisions.release}
          onPause={decisions.pause}
          onResume={decisions.resume}
        />
        {/* A step whose content is lost can never be approved: nothing more of it to read before approving. */}
        {selected && selectedCut && !selected.contentLost ? (
          <div className="notice cut-notice" role="note" data-testid="cut-notice">
            <p>
              Only part of this step is shown: {kibText(selectedCut.totalBytes - selectedCut.shownBytes)} more of{' '}
              {kibText(selectedCut.totalBytes)}. Approving approves all of it: read the rest first.
            </p>
            <button type="button" disabled={loadingWhole} onClick={() => showWhole(selected.step.id)}>
              {loadingWhole ? 'Loading all of it…' : `Show all (${kibText(selectedCut.totalBytes)})`}
            </button>
            <ErrorBox error={wholeError} onDismiss={() => setWholeError(null)} />
          </div>
        ) : null}
        {listedSelected && !selected ? (
          <article className="step-detail" aria-busy={detailError ? undefined : 'true'} aria-labelledby="step-title">
            <header className="detail-head">
              <RiskBadge risk={listedSelected.risk as Risk | null} />
              <h2 id="step-title">
                <MarkedText text={listedSelected.title} />
              </h2>
            </header>
            {detailError ? (
              <ErrorBox error={detailError} onDismiss={() => setDetailError(null)} />
            ) : (
              <p className="muted">Loading this step…</p>
            )}
          </article>
        ) : null}
        {selected ? (
          <StepDetail
            record={selected}
            policy={policy}
            busy={busyFor(selected.step.planId)}
            now={now}
            rememberable={ruleChoicesFor(selected, policy).length > 0}
            hunksOff={hunksOffFor(hunkChoices, selected)}
            onHunksOffChange={(off) =>
              setHunkChoices((previous) => new Map(previous).set(selected.step.id, { previewHash: selected.previewHash, off }))
            }
            onApprove={() => startApprove(selected)}
            onReject={() => startReject(selected)}
            onRemember={() => setPending({ kind: 'remember', record: selected })}
          />
        ) : listedSelected ? null : (
          <div className="all-clear">
            <p className="all-clear-mark" aria-hidden="true">
              ✓
            </p>
            <p>All caught up.</p>
            <p className="muted">
              Executor is listening. Press <kbd>?</kbd> for keyboard shortcuts.
            </p>
          </div>
        )}
      </section>
      {pending?.kind === 'confirmHigh' ? (
        <Dialog
          title="Approve a HIGH-risk step?"
          onCancel={() => setPending(null)}
          className={runsSomething(pending.record) ? 'wide' : undefined}
        >
          <p>
            <RiskBadge risk="HIGH" /> <MarkedText text={summarizeStep(pending.record.step, roots)} />
          </p>
          <InvisibleWarning texts={stepTexts(pending.record)} what="command or code of this step" />
          <WhatRuns step={pending.record.step} limits={policy} roots={roots} compact />
          <ul className="reasons">
            {pending.record.evaluation?.reasons.map((reason) => (
              <li key={reason}>
                <ReasonText reason={reason} />
              </li>
            ))}
          </ul>
          {pending.part ? (
            <p data-testid="confirm-hunks">
              Only <strong>{hunkPartWords(pending.part)}</strong> will be written; the unchecked hunks are not.
            </p>
          ) : null}
          <p>This step is rated HIGH. Approve it only if you have read the preview and expect exactly this.</p>
          <div className="dialog-actions">
            <button type="button" className="ghost" onClick={() => setPending(null)}>
              Cancel
            </button>
            <button
              type="button"
              className="danger"
              onClick={() => {
                const { record, part } = pending;
                setPending(null);
                void approve(record, undefined, part);
              }}
            >
              {pending.part ? `Yes, approve ${hunkPartWords(pending.part)}` : 'Yes, approve HIGH-risk step'}
            </button>
          </div>
        </Dialog>
      ) : null}
      {pending?.kind === 'reject' ? (
        <RejectDialog
          record={pending.record}
          onCancel={() => setPending(null)}
          onReject={(reason) => {
            const record = pending.record;
            setPending(null);
            hold(
              [record],
              `Rejecting ${quotedStep(record.step, roots)}`,
              () =>
                run(record.step.planId, `Rejecting ${quotedStep(record.step, roots)}…`, async () => {
                  await api.reject({ stepId: record.step.id, reason });
                  setSelectedId(null);
                  return `${quotedStep(record.step, roots)} was rejected. The reason was sent back to whoever proposed it.`;
                }),
              (presign) => [presign('reject', { stepId: record.step.id, reason })],
            );
          }}
        />
      ) : null}
      {pending?.kind === 'remember' ? (
        <RememberDialog
          record={pending.record}
          choices={ruleChoicesFor(pending.record, policy)}
          onCancel={() => setPending(null)}
          onSave={(choice, lifetime) => {
            const record = pending.record;
            setPending(null);
            void approve(record, { choice, lifetime });
          }}
        />
      ) : null}
      {pending?.kind === 'approvePlan' ? (
        <Dialog
          title={`Approve all ${pending.group.steps.length} steps of plan ${markedPlainText(pending.group.steps[0]?.planPurpose ? `“${pending.group.steps[0].planPurpose}”` : pending.group.planId)}?`}
          onCancel={() => setPending(null)}
          className={pending.group.steps.some(runsSomething) ? 'wide' : undefined}
        >
          <p>Every step in this plan is rated MEDIUM or lower. They run in plan order; a failure stops the rest.</p>
          <InvisibleWarning texts={pending.group.steps.flatMap(stepTexts)} what="command or code of a step in this plan" />
          <ul className="reasons">
            {pending.group.steps.map((record) => (
              <li key={record.step.id}>
                <RiskBadge risk={record.evaluation?.risk} /> <MarkedText text={summarizeStep(record.step, roots)} />
                {/* Approving a whole plan approves its code too: the code is shown here, not only in each step's detail. */}
                <WhatRuns step={record.step} limits={policy} roots={roots} compact />
              </li>
            ))}
          </ul>
          <div className="dialog-actions">
            <button type="button" className="ghost" onClick={() => setPending(null)}>
              Cancel
            </button>
            <button
              type="button"
              className="primary"
              onClick={() => {
                const group = pending.group;
                setPending(null);
                hold(
                  group.steps,
                  `Approving all ${group.steps.length} steps of the plan`,
                  () =>
                    run(group.planId, `Approving all ${group.steps.length} steps of the plan…`, async () => {
                      for (const record of group.steps) {
                        await api.approve({ stepId: record.step.id, ...(record.previewHash ? { previewHash: record.previewHash } : {}) });
                      }
                      setSelectedId(null);
                      return `All ${group.steps.length} steps of the plan were approved; they run in plan order.`;
                    }),
                  (presign) =>
                    group.steps.map((record) =>
                      presign('approve', { stepId: record.step.id, ...(record.previewHash ? { previewHash: record.previewHash } : {}) }),
                    ),
                );
              }}
            >
              Approve all
            </button>
          </div>
        </Dialog>
      ) : null}
    </div>
  );
}

/** A command step's command line (its argv quoted as a shell would need it), as it will run. */
function commandText(record: StepRecord): string | null {
  return record.step.action === 'runCommand' ? commandLineOf(record.step.args) : null;
}

/** Whether the step runs a command or code, which the person must see to decide on. */
function runsSomething(record: StepRecord): boolean {
  return record.step.action === 'runCommand' || record.step.action === 'runCode';
}

function codeText(record: StepRecord): string | null {
  const args = record.step.args as Record<string, unknown>;
  return record.step.action === 'runCode' && typeof args.code === 'string' ? args.code : null;
}

/** Every text of the step that says what it touches or runs: checked for invisible characters. */
function stepTexts(record: StepRecord): (string | null)[] {
  const args = record.step.args as Record<string, unknown>;
  const strings = (value: unknown): string[] => (typeof value === 'string' ? [value] : Array.isArray(value) ? value.flatMap(strings) : []);
  const env = record.step.action === 'runCommand' ? Object.values(record.step.args.env ?? {}) : [];
  return [
    targetPath(record.step),
    commandText(record),
    codeText(record),
    ...strings(args.argv),
    ...strings(args.cwd),
    ...strings(args.url),
    ...strings(args.allowSecrets),
    ...env,
  ];
}

/**
 * A dry run that did not succeed, in one line for the decision: the exit code (or time-out, memory)
 * and the first line of its error output, or the code's error. Null when it succeeded or made no run.
 */
export function dryRunFailureText(preview: StepRecord['preview']): string | null {
  if (preview?.kind === 'commandRun') {
    const ending = preview.timedOut
      ? 'timed out'
      : preview.oomKilled
        ? 'ran out of memory'
        : preview.exitCode !== 0
          ? `exited with ${preview.exitCode ?? 'no exit code'}`
          : null;
    if (!ending) return null;
    // The last line a program printed before it gave up is most often the reason ("npm: not found").
    const lastLine = (text: string) => text.split('\n').findLast((line) => line.trim() !== '');
    const said = lastLine(preview.stderr.text) ?? lastLine(preview.stdout.text);
    return `The dry run ${ending}${said ? `: ${said.trim().slice(0, 300)}` : ''}.`;
  }
  if (preview?.kind === 'codeRun' && !preview.result.ok)
    return `The dry run failed (${preview.result.code}): ${preview.result.message.slice(0, 300)}`;
  return null;
}

/** Why no dry run could be made: its first line, then the rest (a build log's last lines) scrolled to its end, where the failure is. */
function NoPreviewWhy({ reason, full }: { reason: string; full: string }) {
  const rest = full.includes('\n') ? full.slice(full.indexOf('\n') + 1) : '';
  const log = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (log.current) log.current.scrollTop = log.current.scrollHeight;
  }, [rest]);
  return (
    <div className="warning dry-run-failed" role="note" data-testid="no-preview-why">
      <p>
        <strong>
          No dry run could be made: <MarkedText text={reason} />
        </strong>
      </p>
      {rest ? (
        <pre className="output" tabIndex={0} aria-label="Why no dry run could be made" ref={log}>
          <MarkedText text={rest} />
        </pre>
      ) : null}
    </div>
  );
}

function StepDetail({
  record,
  policy,
  busy,
  now,
  rememberable,
  hunksOff,
  onHunksOffChange,
  onApprove,
  onReject,
  onRemember,
}: {
  record: StepRecord;
  policy: Policy | undefined;
  busy: boolean;
  now: number;
  rememberable: boolean;
  hunksOff: ReadonlySet<number>;
  onHunksOffChange(off: ReadonlySet<number>): void;
  onApprove(): void;
  onReject(): void;
  onRemember(): void;
}) {
  const heldPlans = useHeldPlans();
  const roots = useRoots();
  const evaluation = record.evaluation;
  const critical = evaluation?.risk === 'CRITICAL' || evaluation?.allowed === false;
  // Its content (a blob in the data directory) is lost: nothing can be approved, only rejected.
  const lost = record.contentLost !== undefined;
  // Nothing to decide on yet: the preview the approval binds to does not exist.
  const preparing = isPreparing(record);
  const part = hunkPartOf(record, hunksOff);
  return (
    <article className="step-detail" aria-labelledby="step-title">
      <header className="detail-head">
        <RiskBadge risk={evaluation?.risk} />
        <h2 id="step-title">
          <MarkedText text={summarizeStep(record.step, roots)} />
        </h2>
      </header>
      <InvisibleWarning texts={[record.step.meta.purpose, ...stepTexts(record)]} what="path, command or code of this step" />
      <dl className="facts">
        <dt>Purpose</dt>
        <dd>
          {record.step.meta.purpose ? (
            <MarkedText text={record.step.meta.purpose} />
          ) : (
            <span className="muted">The proposer gave no purpose.</span>
          )}
        </dd>
        {targetPath(record.step) ? (
          <>
            <dt>Path</dt>
            <dd>
              <code>
                <MarkedText text={targetPath(record.step)!} />
              </code>
            </dd>
          </>
        ) : null}
        <dt>Proposed by</dt>
        <dd>
          {record.step.meta.origin}
          {record.step.meta.client ? (
            <>
              {' '}
              (<MarkedText text={record.step.meta.client} />)
            </>
          ) : (
            ''
          )}{' '}
          · {formatTime(record.createdAt)}
          {record.step.meta.origin === 'agent' ? <ProposedByRun stepId={record.step.id} label={record.step.meta.client} /> : null}
        </dd>
        {record.planPurpose ? (
          <>
            <dt>Plan</dt>
            <dd data-testid="detail-plan-purpose">
              <MarkedText text={record.planPurpose} />
            </dd>
          </>
        ) : null}
        <dt>Step</dt>
        <dd>
          <code>
            <MarkedText text={record.step.id} />
          </code>{' '}
          · step {record.position + 1} of plan{' '}
          <code>
            <MarkedText text={record.step.planId} />
          </code>
        </dd>
        {record.consentExpiresAt ? (
          <>
            <dt>Expires</dt>
            <dd>
              {formatTime(record.consentExpiresAt)}{' '}
              {record.status === 'approved' ? '(an approval not used by then is spent)' : '(undecided by then, the step expires)'}
            </dd>
          </>
        ) : null}
      </dl>
      {record.contentLost ? <ContentLostNote lost={record.contentLost} status={record.status} /> : null}
      <WhatRuns step={record.step} limits={policy} roots={roots} />
      <RepetitionHint step={record.step} />
      {record.blockedBy ? (
        PLAN_BREAKING_STATUSES.includes(record.blockedBy.status) ? (
          <p className="warning blocked-note" role="note" data-testid="blocked-by">
            This plan stopped: <MarkedText text={record.blockedBy.reason} /> Approve this step only if it still makes sense on its own.
          </p>
        ) : (
          <p className="muted blocked-note" role="note" data-testid="blocked-by">
            Waits:{' '}
            <MarkedText
              text={record.status === 'approved' && heldPlans.has(record.step.planId) ? HELD_FOR_DISK : record.blockedBy.reason}
            />
          </p>
        )
      ) : record.status === 'approved' && heldPlans.has(record.step.planId) ? (
        <p className="muted blocked-note" role="note" data-testid="blocked-by">
          Waits: {HELD_FOR_DISK}
        </p>
      ) : null}
      {evaluation ? (
        <div className="assessment">
          <section aria-label="Why this risk">
            <h3>Why {evaluation.risk}</h3>
            <ul className="reasons">
              {evaluation.reasons.map((reason) => (
                <li key={reason}>
                  <ReasonText reason={reason} />
                </li>
              ))}
            </ul>
          </section>
          {evaluation.mitigations.length ? (
            <section aria-label="Mitigations">
              <h3>Safeguards</h3>
              <ul className="mitigations">
                {evaluation.mitigations.map((text) => (
                  <li key={text}>
                    <MarkedText text={text} />
                  </li>
                ))}
              </ul>
            </section>
          ) : null}
          {!evaluation.reversible ? <p className="warning">This step cannot be reverted once it has run.</p> : null}
        </div>
      ) : null}
      {record.status === 'awaiting_consent' && dryRunFailureText(record.preview) ? (
        // Said where the decision is made: the full output is further down, in the preview.
        <p className="warning dry-run-failed" role="note" data-testid="dry-run-failed">
          <strong>
            <MarkedText text={dryRunFailureText(record.preview)!} />
          </strong>{' '}
          Approving runs it for real, and it will most likely fail the same way.{' '}
          <button
            type="button"
            className="link"
            onClick={() => document.getElementById('dry-run-preview')?.scrollIntoView({ block: 'start' })}
          >
            See its output
          </button>
        </p>
      ) : null}
      {record.status === 'awaiting_consent' && noPreviewWhy(record) ? (
        // Said where the decision is made: a Dockerfile that did not build, in its own words and its log's last lines.
        <NoPreviewWhy reason={noPreviewWhy(record)!} full={record.previewError!} />
      ) : null}
      <SameFileNotice record={record} busy={busy} />
      <div className="actions" role="group" aria-label="Decision">
        {record.status === 'awaiting_consent' || preparing ? (
          <button
            type="button"
            className={evaluation?.risk === 'HIGH' ? 'danger' : 'primary'}
            disabled={busy || critical || lost || preparing || part?.accepted.length === 0}
            onClick={onApprove}
            aria-keyshortcuts="a"
            aria-describedby={part ? 'approve-part-note' : undefined}
          >
            {part ? (part.accepted.length === 0 ? 'Approve (no hunk checked)' : `Approve ${hunkPartWords(part)}`) : 'Approve'}
          </button>
        ) : null}
        {rememberable && (record.status === 'awaiting_consent' || preparing) ? (
          // A rule is for the step as proposed: with hunks unticked, only the plain approval of the checked ones is offered.
          <button type="button" disabled={busy || critical || lost || preparing || part !== null} onClick={onRemember}>
            Approve and remember…
          </button>
        ) : null}
        {canReject(record) ? (
          <button type="button" disabled={busy} onClick={onReject} aria-keyshortcuts="r">
            Reject
          </button>
        ) : null}
        {critical ? <p className="muted inline-note">The policy denies CRITICAL steps; they cannot be approved here.</p> : null}
        {part ? (
          <p className="warning inline-note" id="approve-part-note" data-testid="approve-part-note">
            {part.accepted.length === 0 ? NO_HUNK_CHECKED : `Some hunks are unchecked below: Approve writes only ${hunkPartWords(part)}.`}
          </p>
        ) : null}
      </div>
      <StepChanges record={record} busy={busy} off={hunksOff} onOffChange={onHunksOffChange} />
      <StoppedRunOutput record={record} />
      <section className="preview-section" id="dry-run-preview" aria-label="Dry-run preview">
        <h3>Dry-run preview</h3>
        {preparing ? (
          <p>
            <PreparingNote stepId={record.step.id} since={record.createdAt} now={now} />
          </p>
        ) : (
          <PreviewPanel preview={record.preview} error={noPreviewWhy(record)} />
        )}
      </section>
    </article>
  );
}

function RejectDialog({ record, onCancel, onReject }: { record: StepRecord; onCancel(): void; onReject(reason: string): void }) {
  const roots = useRoots();
  const [reason, setReason] = useState('');
  return (
    <Dialog title={`Reject ${markedPlainText(summarizeStep(record.step, roots))}?`} onCancel={onCancel}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (reason.trim()) onReject(reason.trim());
        }}
      >
        <label htmlFor="reject-reason">Reason (sent back to whoever proposed it)</label>
        <textarea
          id="reject-reason"
          autoFocus
          required
          maxLength={2000}
          rows={4}
          value={reason}
          aria-keyshortcuts="Control+Enter Meta+Enter"
          aria-describedby="reject-reason-hint"
          onChange={(event) => setReason(event.target.value)}
          onKeyDown={(event) => {
            // Enter alone is a new line in the reason; Ctrl+Enter (Cmd+Enter on a Mac) sends it, as in chat and review tools.
            if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && !event.nativeEvent.isComposing) {
              event.preventDefault();
              if (reason.trim()) onReject(reason.trim());
            }
          }}
        />
        <p id="reject-reason-hint" className="muted small-note">
          <kbd>Ctrl</kbd>+<kbd>Enter</kbd> (<kbd>⌘</kbd>+<kbd>Enter</kbd> on a Mac) rejects with this reason. You can undo for a few seconds
          afterwards.
        </p>
        <div className="dialog-actions">
          <button type="button" className="ghost" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className="danger" disabled={!reason.trim()}>
            Reject step
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** Whose steps and where, in the words the dialog uses: "steps of agent "x" in /ws". */
export function ruleScopeWords(record: StepRecord, choice: RuleChoice): string {
  const proposer = proposerOf(record.step);
  const whose = proposer ? describeProposer(proposer) : 'no one';
  return choice.draft.kind === 'url' ? `${whose}, for ${choice.draft.host} only` : `${whose} in ${choice.draft.root}`;
}

function RememberDialog({
  record,
  choices,
  onCancel,
  onSave,
}: {
  record: StepRecord;
  choices: RuleChoice[];
  onCancel(): void;
  onSave(choice: RuleChoice, lifetime: RuleLifetime): void;
}) {
  const roots = useRoots();
  const [index, setIndex] = useState(0);
  const [lifetime, setLifetime] = useState<RuleLifetime>('day');
  const choice = choices[index]!;
  return (
    <Dialog title="Approve and remember" onCancel={onCancel}>
      <p>
        Approve{' '}
        <strong>
          <MarkedText text={summarizeStep(record.step, roots)} />
        </strong>{' '}
        and let similar steps run without asking. Choose how far the rule reaches:
      </p>
      <fieldset className="choices">
        <legend>Rule</legend>
        {choices.map((option, optionIndex) => (
          <label key={option.label} className="choice">
            <input type="radio" name="rule-choice" checked={optionIndex === index} onChange={() => setIndex(optionIndex)} />
            <span>{option.label}</span>
          </label>
        ))}
      </fieldset>
      <p className="rule-scope" data-testid="rule-scope">
        This rule covers only <strong>{ruleScopeWords(record, choice)}</strong>. Other agents, and other folders, still ask.
      </p>
      <label htmlFor="rule-lifetime">Remember for</label>
      <select id="rule-lifetime" value={lifetime} onChange={(event) => setLifetime(event.target.value as RuleLifetime)}>
        {RULE_LIFETIME_NAMES.map((name) => (
          <option key={name} value={name}>
            {RULE_LIFETIMES[name].label}
          </option>
        ))}
      </select>
      <p className="rule-words" aria-live="polite" data-testid="rule-words">
        {describeRule({
          ...choice.draft,
          ...(proposerOf(record.step) ? { proposer: proposerOf(record.step)! } : {}),
          expiresAt: expiryFor(lifetime, new Date()),
        })}
      </p>
      <p className="muted">
        {lifetime === 'never'
          ? 'The rule lasts until you remove it in Settings.'
          : `The rule ends ${RULE_LIFETIMES[lifetime].label} from now; you can remove it earlier in Settings.`}{' '}
        Every step it approves is recorded in the audit log and shown here as a notice.
      </p>
      <div className="dialog-actions">
        <button type="button" className="ghost" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" className="primary" onClick={() => onSave(choice, lifetime)}>
          Approve and save rule
        </button>
      </div>
    </Dialog>
  );
}
