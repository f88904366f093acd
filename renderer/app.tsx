import { useEffect, useMemo, useRef, useState } from 'react';
import type { StepRecord } from '../src/domain/step-record.js';
import type { ExecutorClient } from '../src/ipc/client/client.js';
import { connectExecutor } from '../src/ipc/client/renderer-entry.js';
import { ApiContext, RootsContext, useApi, useLoaded } from './api.js';
import { Dialog } from './components/dialog.js';
import { markedPlainText } from './components/marked-text.js';
import { ErrorBox } from './components/error-box.js';
import { playChime, raiseNotice, showFaviconCount, soundWanted, WaitingNotifier, windowInView } from './attention.js';
import { AttentionControls } from './components/attention-controls.js';
import { FirstRunRoot } from './components/first-run-root.js';
import { PausedBanner, StopAllButton, useHostPause } from './components/stop-switch.js';
import { HeldPlansContext, heldPlansOf, StorageHoldBanner, useStorageHold } from './components/storage-hold.js';
import { desktopNotify, titleWithCount } from './desktop-notify.js';
import { SHORTCUTS, useKeys } from './keys.js';
import { summarizeStep } from './step-text.js';
import { useWaitingSteps } from './waiting-steps.js';
import { AuditView } from './views/audit-view.js';
import { HistoryView } from './views/history-view.js';
import { QueueView } from './views/queue-view.js';
import { SettingsView } from './views/settings-view.js';
import { RunsView } from './views/runs-view.js';
import { SkillsView } from './views/skills-view.js';
import { SkillNotices, useSkillNotices, useSkillsAwaiting } from './components/skill-notices.js';
import { QuestionsPanel, useWaitingQuestions } from './runs/questions.js';

const VIEWS = [
  { id: 'queue', label: 'Queue', key: '1' },
  { id: 'runs', label: 'Runs', key: '5' },
  { id: 'history', label: 'History', key: '2' },
  { id: 'skills', label: 'Skills', key: '6' },
  { id: 'audit', label: 'Audit log', key: '3' },
  { id: 'settings', label: 'Settings', key: '4' },
] as const;
type ViewId = (typeof VIEWS)[number]['id'];

export function App() {
  const [api, setApi] = useState<ExecutorClient | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    connectExecutor().then(setApi, setError);
  }, []);
  if (error) {
    return (
      <main className="boot">
        <h1>Executor</h1>
        <ErrorBox error={error} />
      </main>
    );
  }
  if (!api) {
    return (
      <main className="boot" aria-busy="true">
        <h1>Executor</h1>
        <p className="muted">Connecting…</p>
      </main>
    );
  }
  return (
    <ApiContext.Provider value={api}>
      <Shell />
    </ApiContext.Provider>
  );
}

function viewFromHash(): ViewId {
  // A view's own state may follow its name (History's filters: #history?status=failed).
  const id = location.hash.replace(/^#\/?/, '').split('?')[0];
  return (VIEWS.find((view) => view.id === id)?.id ?? 'queue') as ViewId;
}

function Shell() {
  const api = useApi();
  const [view, setView] = useState<ViewId>(viewFromHash);
  const [help, setHelp] = useState(false);
  // Every step that has not started (a proposal shows at once, "preparing preview", while the host computes its dry run): the person can still decide or withdraw each (approved ones wait for an earlier step).
  // Paged summaries, followed by their events; the record of the one step shown in detail only (waiting-steps.ts).
  const waiting = useWaitingSteps(api);
  const policy = useLoaded(() => api.getPolicy(), [], ['policy']);
  const keyStatus = useLoaded(() => api.getKeyStatus(), [], ['audit']);
  // Questions agents and runs wait on: answered in whichever view is open (the Runs view shows them its own way).
  const { waiting: questions, listed: questionsListed } = useWaitingQuestions(api);
  // A question newly asked while the person looks elsewhere gets one notice (and the chime, if wanted), like waiting steps.
  const knownQuestions = useRef<Set<string> | null>(null);
  useEffect(() => {
    if (!questionsListed) return;
    const known = knownQuestions.current;
    knownQuestions.current = new Set(questions.map((question) => question.id));
    if (!known) return;
    const fresh = questions.filter((question) => !known.has(question.id));
    if (fresh.length === 0) return;
    if (soundWanted()) playChime();
    if (windowInView()) return;
    const first = fresh[0]!;
    raiseNotice({
      title: fresh.length === 1 ? 'a question waits for your answer' : `${fresh.length} questions wait for your answer`,
      body: `${first.runId ? 'A run' : `Agent ${markedPlainText(first.askedBy)}`} asks: ${markedPlainText(first.text.slice(0, 300))}`,
    });
  }, [questions, questionsListed]);
  const [disconnected, setDisconnected] = useState(false);
  // A skill disabled in its trial (or by the pin check) is told here and, with the window away, as a notification.
  const skillNotices = useSkillNotices(api);
  const skillsAwaiting = useSkillsAwaiting(api);
  // The stop switch: its button in the sidebar, its banner above every view while it is on.
  const hostPause = useHostPause(api);
  const storageHold = useStorageHold(api);
  const heldPlans = useMemo(() => heldPlansOf(storageHold), [storageHold]);
  // One notice per burst of newly waiting steps, naming the agent and the step (renderer/attention.ts).
  const notifier = useRef<WaitingNotifier | null>(null);
  notifier.current ??= new WaitingNotifier(
    () => policyRoots.current,
    (notice) => {
      if (soundWanted()) playChime();
      if (!windowInView()) raiseNotice(notice);
    },
  );
  const knownAtOpen = useRef(false);
  const [ruleNotices, setRuleNotices] = useState<RuleNotice[]>([]);
  const noticed = useRef(new Set<string>());

  const policyRoots = useRef<readonly string[]>([]);
  policyRoots.current = policy.data?.workspaceRoots ?? [];

  const count = waiting.awaitingConsent;
  useEffect(() => {
    document.title = titleWithCount(count);
    showFaviconCount(count);
  }, [count]);

  useEffect(() => {
    if (knownAtOpen.current || !waiting.data) return;
    knownAtOpen.current = true;
    notifier.current?.know(waiting.data);
  }, [waiting.data]);
  useEffect(() => () => notifier.current?.dispose(), []);

  useEffect(() => {
    const onHash = () => setView(viewFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  // Steps that newly wait go to the notifier; steps a remembered rule approved get a notice here.
  useEffect(() => {
    let off: (() => void) | undefined;
    void api
      .on('step', (record: StepRecord) => {
        const notice = ruleNoticeFor(record, policyRoots.current);
        if (notice && !noticed.current.has(notice.stepId)) {
          noticed.current.add(notice.stepId);
          setRuleNotices((previous) => [notice, ...previous].slice(0, MAX_RULE_NOTICES));
          if (document.visibilityState === 'hidden' || !document.hasFocus()) desktopNotify('Executor: approved by your rule', notice.text);
        }
        notifier.current?.offer(record);
      })
      .then(
        (unsubscribe) => (off = unsubscribe),
        () => setDisconnected(true),
      );
    return () => off?.();
  }, [api]);

  useEffect(() => {
    if (waiting.error && (waiting.error as { code?: string }).code === 'IPC_UNAVAILABLE') setDisconnected(true);
  }, [waiting.error]);

  const go = (id: ViewId) => {
    history.replaceState(null, '', `#${id}`);
    setView(id);
  };
  useKeys({
    '1': () => go('queue'),
    '2': () => go('history'),
    '3': () => go('audit'),
    '4': () => go('settings'),
    '5': () => go('runs'),
    '6': () => go('skills'),
    '?': () => setHelp(true),
  });

  return (
    <RootsContext.Provider value={policy.data?.workspaceRoots ?? []}>
      <div className="shell">
        <a className="skip-link" href="#main">
          Skip to content
        </a>
        <nav className="sidebar" aria-label="Views">
          <div className="brand">
            <span className="brand-mark" aria-hidden="true">
              ⬢
            </span>{' '}
            Executor
          </div>
          <StopAllButton api={api} pause={hostPause} />
          <ul>
            {VIEWS.map((entry) => (
              <li key={entry.id}>
                <a
                  href={`#${entry.id}`}
                  className={`nav-link ${view === entry.id ? 'active' : ''}`}
                  aria-current={view === entry.id ? 'page' : undefined}
                  onClick={(event) => {
                    event.preventDefault();
                    go(entry.id);
                  }}
                >
                  <span>{entry.label}</span>
                  {entry.id === 'queue' && count > 0 ? (
                    <span className="count" aria-label={`${count} waiting`}>
                      {count}
                    </span>
                  ) : entry.id === 'runs' && questions.length > 0 ? (
                    <span
                      className="count"
                      aria-label={`${questions.length} question${questions.length === 1 ? '' : 's'} waiting for your answer`}
                    >
                      {questions.length}
                    </span>
                  ) : entry.id === 'skills' && skillsAwaiting > 0 ? (
                    <span
                      className="count"
                      aria-label={`${skillsAwaiting} skill${skillsAwaiting === 1 ? '' : 's'} waiting for your approval`}
                    >
                      {skillsAwaiting}
                    </span>
                  ) : (
                    <kbd aria-hidden="true">{entry.key}</kbd>
                  )}
                </a>
              </li>
            ))}
          </ul>
          <button type="button" className="ghost help-button" onClick={() => setHelp(true)} aria-keyshortcuts="?">
            Keyboard shortcuts <kbd>?</kbd>
          </button>
          <AttentionControls />
        </nav>
        <main id="main" className="content">
          <PausedBanner api={api} pause={hostPause} />
          <StorageHoldBanner hold={storageHold} />
          {disconnected ? <ErrorBox error={{ code: 'IPC_UNAVAILABLE', message: 'The connection to Executor was lost.' }} /> : null}
          <ErrorBox error={waiting.error && !disconnected ? waiting.error : null} />
          <FirstRunRoot policy={policy.data} onOpenSettings={() => go('settings')} />
          <RuleNotices
            notices={ruleNotices}
            onDismiss={(stepId) => setRuleNotices((previous) => previous.filter((notice) => notice.stepId !== stepId))}
            onShowRule={(ruleId) => {
              go('settings');
              requestAnimationFrame(() => document.getElementById(`rule-${ruleId}`)?.scrollIntoView({ block: 'center' }));
            }}
          />
          <SkillNotices
            notices={skillNotices.notices}
            onDismiss={skillNotices.dismiss}
            onShow={(skillId) => {
              location.hash = `#skills?${new URLSearchParams({ skill: skillId }).toString()}`;
            }}
          />
          {view !== 'runs' ? (
            <QuestionsPanel
              questions={questions}
              onOpenRun={(runId) => {
                location.hash = `#runs?${new URLSearchParams({ run: runId }).toString()}`;
              }}
            />
          ) : null}
          <div hidden={view !== 'queue'} className="view">
            <HeldPlansContext.Provider value={heldPlans}>
              <QueueView
                waiting={waiting.data ?? []}
                hasMore={waiting.hasMore}
                onMore={waiting.loadMore}
                policy={policy.data}
                active={view === 'queue' && !help}
              />
            </HeldPlansContext.Provider>
          </div>
          <div hidden={view !== 'runs'} className="view">
            {runsMounted(view) ? (
              <RunsView
                active={view === 'runs' && !help}
                policy={policy.data}
                questions={questions}
                onOpenSettings={() => {
                  go('settings');
                  // Settings → Model (renderer/settings-model.tsx), where a run's model is set.
                  requestAnimationFrame(() => {
                    document.getElementById('model-head')?.scrollIntoView({ block: 'start' });
                    document.getElementById('model-provider')?.focus({ preventScroll: true });
                  });
                }}
              />
            ) : null}
          </div>
          <div hidden={view !== 'history'} className="view">
            <HistoryView active={view === 'history' && !help} />
          </div>
          <div hidden={view !== 'skills'} className="view">
            {skillsMounted(view) ? <SkillsView active={view === 'skills' && !help} policy={policy.data} /> : null}
          </div>
          <div hidden={view !== 'audit'} className="view">
            {auditMounted(view) ? <AuditView active={view === 'audit' && !help} /> : null}
          </div>
          <div hidden={view !== 'settings'} className="view">
            <SettingsView policy={policy.data} keyStatus={keyStatus.data} keyError={keyStatus.error} onKeysChanged={keyStatus.reload} />
          </div>
        </main>
        {help ? (
          <Dialog title="Keyboard shortcuts" onCancel={() => setHelp(false)}>
            <table className="shortcuts">
              <tbody>
                {SHORTCUTS.map((shortcut) => (
                  <tr key={shortcut.keys}>
                    <th scope="row">
                      <kbd>{shortcut.keys}</kbd>
                    </th>
                    <td>{shortcut.what}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <div className="dialog-actions">
              <button type="button" className="primary" onClick={() => setHelp(false)} autoFocus>
                Close
              </button>
            </div>
          </Dialog>
        ) : null}
      </div>
    </RootsContext.Provider>
  );
}

/** The runs view is mounted on first visit (it pages runs and follows their events) and then kept. */
let runsVisited = false;
function runsMounted(view: ViewId): boolean {
  if (view === 'runs') runsVisited = true;
  return runsVisited;
}

/** The skills view is mounted on first visit (it reads every skill version) and then kept. */
let skillsVisited = false;
function skillsMounted(view: ViewId): boolean {
  if (view === 'skills') skillsVisited = true;
  return skillsVisited;
}

/** The audit view is mounted on first visit and then kept, so a running verification survives switching views. */
let auditVisited = false;
function auditMounted(view: ViewId): boolean {
  if (view === 'audit') auditVisited = true;
  return auditVisited;
}

/** A step a remembered rule approved without asking: said in the window, with a way to the rule. */
export interface RuleNotice {
  stepId: string;
  ruleIds: string[];
  text: string;
}

const MAX_RULE_NOTICES = 5;

/**
 * The notice for a step event, when a remembered rule (not the auto-approve level, not the person)
 * approved that step; null otherwise. Once per step: later events of the same step are the same notice.
 */
export function ruleNoticeFor(record: StepRecord, roots: readonly string[]): RuleNotice | null {
  const ruleIds = record.evaluation?.approvedByRules ?? [];
  if (ruleIds.length === 0 || record.approval?.by.channel !== 'policy') return null;
  const who = record.step.meta.origin === 'agent' ? ` for agent ${record.step.meta.client ?? 'unnamed'}` : '';
  return {
    stepId: record.step.id,
    ruleIds,
    text: `Approved by your rule ${ruleIds.join(', ')}${who}: ${summarizeStep(record.step, roots)}`,
  };
}

function RuleNotices({
  notices,
  onDismiss,
  onShowRule,
}: {
  notices: RuleNotice[];
  onDismiss(stepId: string): void;
  onShowRule(ruleId: string): void;
}) {
  if (notices.length === 0) return null;
  return (
    <div role="log" aria-live="polite" aria-label="Steps approved by your rules">
      <ul className="rule-notices">
        {notices.map((notice) => (
          <li key={notice.stepId} className="rule-notice" data-testid="rule-notice">
            <span className="notice-text">{notice.text}</span>
            {notice.ruleIds.map((ruleId) => (
              <button key={ruleId} type="button" className="small" onClick={() => onShowRule(ruleId)}>
                See or remove rule {ruleId}
              </button>
            ))}
            <button
              type="button"
              className="small ghost"
              aria-label={`Dismiss the notice about ${notice.stepId}`}
              onClick={() => onDismiss(notice.stepId)}
            >
              Dismiss
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
