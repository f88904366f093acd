import { useState } from 'react';
import type { StepSummary } from '../../src/domain/step-summary.js';
import { useRoots } from '../api.js';
import { shortId } from './copy-id.js';
import { Dialog } from './dialog.js';
import { UnifiedDiff } from './diff-view.js';
import { MarkedText, markedPlainText } from './marked-text.js';
import { displayPath } from '../step-text.js';

/*
 * "Revert plan", "Revert session", "Revert run": every step that ran, newest first, as the host will
 * revert them. A step whose file someone changed since shows that change on its own (as the step left
 * the file → as it is now, as git shows an edit), and two ways on: leave that step (with the change)
 * and revert the others, or force, asked twice, which keeps what it overwrites as a backup.
 */

/** One file of a step's revert preview, as the plan's, the session's and the run's previews carry it. */
interface RevertFile {
  path: string;
  state: string;
  restoreHash?: string | null;
  changedSince?: string | null;
  changedSinceOmittedReason?: string;
}

export interface StepsRevertPreview {
  steps: {
    stepId: string;
    title: string;
    state: 'revert' | 'conflict' | 'skip';
    reason?: string;
    files: RevertFile[];
    moreFiles: number;
  }[];
}

/** What is reverted, as the dialog names it: "plan p-1…", "session Claude Code · api", "run r-…". */
export interface RevertSubject {
  noun: 'plan' | 'session' | 'run';
  name: string;
}

function fileWords(file: RevertFile): string {
  switch (file.state) {
    case 'conflict':
      return '— CONFLICT: changed after the step';
    case 'already_restored':
      return '— already as it was';
    case 'delete':
      return '— will be deleted (the step created it)';
    default:
      return file.restoreHash === null ? '— will be deleted (the step created it)' : '— will be restored';
  }
}

const REVERTIBLE: readonly string[] = ['executed', 'failed', 'interrupted', 'cancelled'];

/** Whether a step, by its list summary, applied something a revert could take back: where none did, Revert is not offered. */
export function stepMayBeReverted(summary: Pick<StepSummary, 'status' | 'startedAt' | 'reversible'>): boolean {
  if (summary.status === 'cancelled' && !summary.startedAt) return false;
  return REVERTIBLE.includes(summary.status) && summary.reversible;
}

/** Steps named by their titles, as a person reads them: “Write src/api.js”, “Run npm test”. */
function stepTitles(steps: readonly { title: string }[]): string {
  return steps.map((step) => `“${markedPlainText(step.title)}”`).join(', ');
}

/**
 * What a revert did, in the words History uses: steps by their titles (the preview the person saw
 * names them), a forced step as the "Forced revert of …" row it became.
 */
export function revertNotice(
  subject: string,
  shown: readonly { stepId: string; title: string }[],
  result: { reverted: readonly string[]; skipped: readonly { stepId: string; reason: string }[]; forced: boolean },
): string {
  const title = (stepId: string) => {
    const found = shown.find((step) => step.stepId === stepId);
    return found ? `“${markedPlainText(found.title)}”` : markedPlainText(shortId(stepId));
  };
  const count = `${result.reverted.length} step${result.reverted.length === 1 ? '' : 's'}`;
  return (
    `${subject}: ${count} reverted, newest first${result.reverted.length ? ` (${result.reverted.map(title).join(', ')})` : ''}` +
    `${result.forced ? '; forced: what was overwritten is kept as the backup of the “Forced revert of …” rows in History' : ''}.` +
    `${result.skipped.length ? ` Left as they were: ${result.skipped.map((entry) => `${title(entry.stepId)} (${markedPlainText(entry.reason)})`).join(', ')}.` : ''}`
  );
}

export function StepsRevertDialog({
  subject,
  preview,
  leaving,
  onCancel,
  onRevert,
  onLeave,
}: {
  subject: RevertSubject;
  preview: StepsRevertPreview;
  /** The steps the person chose to leave as they are (the preview is judged without them). */
  leaving: readonly string[];
  onCancel(): void;
  onRevert(force: boolean): void;
  /** Preview again, leaving these steps as they are (absent: this revert cannot leave steps). */
  onLeave?(stepIds: string[]): void;
}) {
  const roots = useRoots();
  const [forcing, setForcing] = useState(false);
  const { noun } = subject;
  const reverting = preview.steps.filter((step) => step.state !== 'skip');
  const conflicts = preview.steps.filter((step) => step.state === 'conflict');
  const names = stepTitles(conflicts);
  if (forcing) {
    return (
      <Dialog title={`Force the ${noun}'s revert?`} onCancel={onCancel}>
        <p className="warning">
          Files changed after {conflicts.length === 1 ? 'step' : 'steps'} {names}. Forcing puts back their content from before the {noun}{' '}
          over those newer changes.
        </p>
        <p>
          Nothing is lost: each forced step runs as a step of its own (“Forced revert of …” in History), what is on disk now is kept as its
          backup, and you can revert it from History. It is recorded in the audit log.
        </p>
        <div className="dialog-actions">
          <button type="button" className="ghost" onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className="danger" onClick={() => onRevert(true)}>
            Yes, overwrite and revert the {noun}
          </button>
        </div>
      </Dialog>
    );
  }
  return (
    <Dialog title={`Revert ${noun} ${markedPlainText(subject.name)}?`} onCancel={onCancel} className="wide">
      <p>
        {reverting.length === 0
          ? `No step of this ${noun} is left to revert.`
          : `${reverting.length} step${reverting.length === 1 ? '' : 's'} will be reverted, newest first. Nothing changes if any of them would meet a conflict.`}
      </p>
      {conflicts.length ? (
        <p className="warning" role="alert">
          Refused as it is: files changed after {conflicts.length === 1 ? 'step' : 'steps'} {names}. Each change is shown below
          {onLeave ? ': leave its step to keep it, or force the revert.' : '.'}
        </p>
      ) : null}
      <ol className="plan-revert-steps">
        {preview.steps.map((step) => (
          <li key={step.stepId} className={`plan-revert-${step.state}`} data-step-id={step.stepId}>
            <span className="cell-title">
              <MarkedText text={step.title} />
            </span>{' '}
            <code title={markedPlainText(step.stepId)}>
              <MarkedText text={shortId(step.stepId)} />
            </code>
            {' — '}
            {step.state === 'skip' ? (
              <>
                left as it is: <MarkedText text={step.reason ?? ''} />
              </>
            ) : step.state === 'conflict' ? (
              'CONFLICT: a file changed after the step'
            ) : (
              'will be reverted'
            )}
            {step.state === 'conflict' && onLeave ? (
              <button
                type="button"
                className="ghost small"
                data-testid="leave-step"
                onClick={() => onLeave([...leaving, step.stepId])}
                title="Keep this step and the change made since it; revert the others"
              >
                Leave this one, revert the others
              </button>
            ) : null}
            {step.state === 'skip' && onLeave && leaving.includes(step.stepId) ? (
              <button type="button" className="ghost small" onClick={() => onLeave(leaving.filter((id) => id !== step.stepId))}>
                Revert it too
              </button>
            ) : null}
            {step.state !== 'skip' && step.files.length ? (
              <ul>
                {step.files.map((file) => (
                  <li key={file.path} className={`revert-${file.state}`}>
                    <code title={markedPlainText(file.path)}>
                      <MarkedText text={displayPath(file.path, roots)} />
                    </code>{' '}
                    {fileWords(file)}
                    {file.state === 'conflict' ? (
                      <div className="changed-since" data-testid="changed-since">
                        <p className="muted">Changed since the step (as the step left it → as it is now):</p>
                        {file.changedSince ? (
                          <UnifiedDiff
                            patch={file.changedSince}
                            path={file.path}
                            label={`What changed in ${markedPlainText(file.path)} since the step`}
                          />
                        ) : (
                          <p className="muted">{markedPlainText(file.changedSinceOmittedReason ?? 'No text diff to show.')}</p>
                        )}
                      </div>
                    ) : null}
                  </li>
                ))}
                {step.moreFiles ? <li className="muted">and {step.moreFiles} more file(s)</li> : null}
              </ul>
            ) : null}
          </li>
        ))}
      </ol>
      <div className="dialog-actions">
        <button type="button" className="ghost" onClick={onCancel}>
          Cancel
        </button>
        {conflicts.length ? (
          <button type="button" className="danger" onClick={() => setForcing(true)}>
            Force revert {noun}…
          </button>
        ) : reverting.length ? (
          <button type="button" className="primary" onClick={() => onRevert(false)}>
            Revert {reverting.length} step{reverting.length === 1 ? '' : 's'}
          </button>
        ) : null}
      </div>
    </Dialog>
  );
}
