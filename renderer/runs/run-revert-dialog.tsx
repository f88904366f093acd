import { useState } from 'react';
import type { RunRevertResult } from '../../src/domain/run.js';
import { useRoots } from '../api.js';
import { shortId } from '../components/copy-id.js';
import { Dialog } from '../components/dialog.js';
import { MarkedText, markedPlainText } from '../components/marked-text.js';
import { displayPath } from '../step-text.js';

/*
 * "Revert run": every step of the run that ran, newest first, as the host will revert them (its dry
 * run, revertRun with dryRun). A step that would meet a conflict is named with its files, and the
 * only way on is a forced revert, asked twice, that keeps what it overwrites — as Revert plan does.
 */

function fileWords(state: string): string {
  switch (state) {
    case 'conflict':
      return '— CONFLICT: changed after the step';
    case 'already_restored':
      return '— already as it was';
    case 'delete':
      return '— will be deleted (the step created it)';
    default:
      return '— will be restored';
  }
}

export function RunRevertDialog({
  preview,
  onCancel,
  onRevert,
}: {
  preview: RunRevertResult;
  onCancel(): void;
  onRevert(force: boolean): void;
}) {
  const roots = useRoots();
  const [forcing, setForcing] = useState(false);
  const reverting = preview.steps.filter((step) => step.state !== 'skip');
  const conflicts = preview.steps.filter((step) => step.state === 'conflict');
  const names = conflicts.map((step) => `“${markedPlainText(step.title)}”`).join(', ');
  if (forcing) {
    return (
      <Dialog title="Force the run's revert?" onCancel={onCancel}>
        <p className="warning">
          Files changed after {conflicts.length === 1 ? 'step' : 'steps'} {names}. Forcing puts back their content from before the run over
          those newer changes.
        </p>
        <p>
          Nothing is lost: each forced step runs as a step of its own, what is on disk now is kept as its backup, and you can revert it from
          History. It is recorded in the audit log.
        </p>
        <div className="dialog-actions">
          <button type="button" className="ghost" onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className="danger" onClick={() => onRevert(true)}>
            Yes, overwrite and revert the run
          </button>
        </div>
      </Dialog>
    );
  }
  return (
    <Dialog title={`Revert run ${markedPlainText(shortId(preview.runId, 16))}?`} onCancel={onCancel} className="wide">
      <p>
        {reverting.length === 0
          ? 'No step of this run is left to revert.'
          : `${reverting.length} step${reverting.length === 1 ? '' : 's'} will be reverted, newest first. Nothing changes if any of them would meet a conflict.`}
      </p>
      {conflicts.length ? (
        <p className="warning" role="alert">
          Refused as it is: files changed after {conflicts.length === 1 ? 'step' : 'steps'} {names}.
        </p>
      ) : null}
      <ol className="plan-revert-steps run-revert-steps">
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
            {step.state !== 'skip' && step.files.length ? (
              <ul>
                {step.files.map((file) => (
                  <li key={file.path} className={`revert-${file.state}`}>
                    <code title={markedPlainText(file.path)}>
                      <MarkedText text={displayPath(file.path, roots)} />
                    </code>{' '}
                    {fileWords(file.state)}
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
            Force revert run…
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
