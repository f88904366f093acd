import { useState } from 'react';
import type { MethodResult } from '../../src/ipc/protocol/methods.js';
import { useRoots } from '../api.js';
import { shortId } from './copy-id.js';
import { Dialog } from './dialog.js';
import { MarkedText, markedPlainText } from './marked-text.js';
import { displayPath } from '../step-text.js';

/** A plan's revert preview, or an agent session's (the same steps and conflicts, named by its label). */
type PlanRevertPreview = Omit<MethodResult<'previewRevertPlan'>, 'planId'> & { planId?: string; label?: string | null; agent?: string };

/**
 * "Revert plan": every step of the plan that ran, newest first, as the host will revert them. When a
 * step would meet a conflict, it is named with its files, and the only way on is a forced revert,
 * asked twice, that keeps what it overwrites (as a single forced revert does).
 */
export function PlanRevertDialog({
  preview,
  onCancel,
  onRevert,
}: {
  preview: PlanRevertPreview;
  onCancel(): void;
  onRevert(force: boolean): void;
}) {
  const roots = useRoots();
  const [forcing, setForcing] = useState(false);
  // An agent session's revert ("Revert session") says session where a plan's says plan.
  const noun = preview.agent !== undefined ? 'session' : 'plan';
  const named = preview.agent !== undefined ? (preview.label ?? shortId(preview.agent, 16)) : shortId(preview.planId ?? '', 16);
  const reverting = preview.steps.filter((step) => step.state !== 'skip');
  const conflicts = preview.steps.filter((step) => step.state === 'conflict');
  if (forcing) {
    return (
      <Dialog title={`Force the ${noun}'s revert?`} onCancel={onCancel}>
        <p className="warning">
          Files changed after {conflicts.length === 1 ? 'step' : 'steps'} {conflicts.map((step) => markedPlainText(step.stepId)).join(', ')}
          . Forcing puts back their content from before the {noun} over those newer changes.
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
            Yes, overwrite and revert the {noun}
          </button>
        </div>
      </Dialog>
    );
  }
  return (
    <Dialog title={`Revert ${noun} ${markedPlainText(named)}?`} onCancel={onCancel} className="wide">
      <p>
        {reverting.length === 0
          ? `No step of this ${noun} is left to revert.`
          : `${reverting.length} step${reverting.length === 1 ? '' : 's'} will be reverted, newest first. Nothing changes if any of them would meet a conflict.`}
      </p>
      {conflicts.length ? (
        <p className="warning" role="alert">
          Refused as it is: files changed after {conflicts.length === 1 ? 'step' : 'steps'}{' '}
          {conflicts.map((step) => markedPlainText(step.stepId)).join(', ')}.
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
            {step.state === 'skip'
              ? `left as it is: ${markedPlainText(step.reason ?? '')}`
              : step.state === 'conflict'
                ? 'CONFLICT: a file changed after the step'
                : 'will be reverted'}
            {step.state !== 'skip' && step.files.length ? (
              <ul>
                {step.files.map((file) => (
                  <li key={file.path} className={`revert-${file.state}`}>
                    <code title={file.path}>
                      <MarkedText text={displayPath(file.path, roots)} />
                    </code>{' '}
                    {file.state === 'conflict'
                      ? '— CONFLICT: changed after the step'
                      : file.state === 'already_restored'
                        ? '— already as it was'
                        : file.restoreHash === null
                          ? '— will be deleted'
                          : '— will be restored'}
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
