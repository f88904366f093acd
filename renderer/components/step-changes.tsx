import { useMemo, useState } from 'react';
import { parseHunks, type DiffHunk } from '../../src/domain/hunks.js';
import { editDetailText } from '../../src/domain/person-edit.js';
import { commandLineOf } from '../../src/domain/shell-quote.js';
import type { StepRecord } from '../../src/domain/step-record.js';
import { cutOf } from '../whole-step.js';
import { useApi } from '../api.js';
import { Dialog } from './dialog.js';
import { ErrorBox } from './error-box.js';
import { MarkedText, markedPlainText } from './marked-text.js';

/** The hunks of a write over an existing text file the person may approve one by one; null when the step has none to choose. */
export function choosableHunks(record: StepRecord): DiffHunk[] | null {
  if (record.status !== 'awaiting_consent' || record.step.action !== 'writeFile' || record.preview?.kind !== 'fileChanges') return null;
  const file = record.preview.files[0];
  if (!file || !file.existedBefore || file.binary || file.diff === null) return null;
  try {
    const hunks = parseHunks(file.diff);
    return hunks.length >= 2 ? hunks : null;
  } catch {
    return null;
  }
}

/**
 * "Approve part of a step, or change it", under the decision buttons of a step waiting for the
 * person: each hunk of a write with a checkbox, which the one Approve above honours (the queue holds
 * which are off, so the button and the `a` key approve exactly what is checked); "Edit before
 * approving" for a write's content or a command line. Also says what the person changed, once they did.
 */
export function StepChanges({
  record,
  busy,
  off,
  onOffChange,
}: {
  record: StepRecord;
  busy: boolean;
  /** The hunks the person unticked (numbers from 1). */
  off: ReadonlySet<number>;
  onOffChange(next: ReadonlySet<number>): void;
}) {
  const api = useApi();
  const hunks = useMemo(() => choosableHunks(record), [record]);
  const [editing, setEditing] = useState(false);
  const [working, setWorking] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const editable =
    record.status === 'awaiting_consent' &&
    ((record.step.action === 'writeFile' && record.step.args.encoding !== 'base64') || record.step.action === 'runCommand');
  const accepted = hunks ? hunks.map((hunk) => hunk.number).filter((number) => !off.has(number)) : [];
  const critical = record.evaluation?.risk === 'CRITICAL' || record.evaluation?.allowed === false;
  const setOff = onOffChange;

  const act = async (label: string, action: () => Promise<string>) => {
    setWorking(label);
    setError(null);
    try {
      setDone(await action());
    } catch (caught) {
      setError(caught);
    } finally {
      setWorking(null);
    }
  };
  // Nothing of a step whose content is lost can be chosen or edited (content-lost.ts).
  if (record.contentLost) return null;
  // A cut record holds only some hunks and part of the content: choosing hunks or editing needs the whole.
  if (cutOf(record)) {
    return (
      <p className="muted" data-testid="changes-need-whole">
        Approving some hunks or editing this step needs all of it: choose Show all above.
      </p>
    );
  }

  return (
    <>
      {record.edit ? (
        <section className="person-edit" aria-label="Your changes">
          <h3>Changed by you (version {record.edit.version})</h3>
          <pre className="edit-detail">{markedPlainText(editDetailText(record.edit, undefined, record.approval !== null, 'person'))}</pre>
        </section>
      ) : null}
      {hunks ? (
        <fieldset className="hunk-picker" disabled={busy || working !== null || critical}>
          <legend>Approve part of this write: {hunks.length} hunks</legend>
          {hunks.map((hunk) => (
            <div key={hunk.number} className="hunk">
              <label>
                <input
                  type="checkbox"
                  checked={!off.has(hunk.number)}
                  onChange={(event) => {
                    const next = new Set(off);
                    if (event.target.checked) next.delete(hunk.number);
                    else next.add(hunk.number);
                    setOff(next);
                  }}
                />{' '}
                Hunk {hunk.number} <code>{hunk.header}</code>
              </label>
              <pre className="hunk-lines" aria-label={`Hunk ${hunk.number}`}>
                {hunk.lines.map((line, index) => (
                  <span key={index} className={line.startsWith('+') ? 'hunk-add' : line.startsWith('-') ? 'hunk-del' : undefined}>
                    {markedPlainText(line)}
                    {'\n'}
                  </span>
                ))}
              </pre>
            </div>
          ))}
          <p className="muted hunk-count" data-testid="hunk-count">
            {accepted.length === hunks.length
              ? `All ${hunks.length} hunks are checked: Approve writes the whole change.`
              : accepted.length === 0
                ? 'No hunk is checked: that leaves the file as it is, so Approve is off. Reject the step instead, or check a hunk.'
                : `Approve writes only hunk${accepted.length === 1 ? '' : 's'} ${accepted.join(', ')} of ${hunks.length}; the unchecked ones are not written.`}
          </p>
        </fieldset>
      ) : null}
      {editable ? (
        <div className="actions">
          <button type="button" disabled={busy || working !== null} onClick={() => setEditing(true)}>
            Edit before approving…
          </button>
        </div>
      ) : null}
      <div role="status" aria-live="polite" className="status-line">
        {working ?? done}
      </div>
      <ErrorBox error={error} onDismiss={() => setError(null)} />
      {editing ? (
        <EditStepDialog
          record={record}
          onCancel={() => setEditing(false)}
          onSave={(change) => {
            setEditing(false);
            void act('Saving your version…', async () => {
              const result = await api.editStep({ stepId: record.step.id, stepHash: record.stepHash, ...change });
              return result.status === 'denied'
                ? `Your version of ${record.step.id} is denied by the policy: ${result.evaluation?.reasons.join(' ') ?? ''}`
                : `Your version of ${record.step.id} is being weighed and previewed again; approve it once its preview shows.`;
            });
          }}
        />
      ) : null}
    </>
  );
}

/** A text editor seeded with the proposed content, or an input seeded with the quoted command line. */
function EditStepDialog({
  record,
  onCancel,
  onSave,
}: {
  record: StepRecord;
  onCancel(): void;
  onSave(change: { content: string } | { command: string }): void;
}) {
  const isCommand = record.step.action === 'runCommand';
  const seed =
    record.step.action === 'runCommand'
      ? commandLineOf(record.step.args)
      : record.step.action === 'writeFile'
        ? record.step.args.content
        : '';
  const [text, setText] = useState(seed);
  const unchanged = isCommand ? text.trim() === seed.trim() : text === seed;
  return (
    <Dialog title={isCommand ? 'Edit the command line' : 'Edit the content'} onCancel={onCancel} className="wide">
      <p className="muted">
        Your version is a new version of the step: the policy weighs it again (an edit can raise the risk), it is previewed again, and you
        approve it then. The agent is told what you changed.
      </p>
      <label className="field">
        <span>
          {isCommand ? (
            'Command line (runs under sh -c in the sandbox)'
          ) : (
            <MarkedText text={`Content of ${record.step.action === 'writeFile' ? record.step.args.path : ''}`} />
          )}
        </span>
        {isCommand ? (
          <input type="text" className="mono" value={text} onChange={(event) => setText(event.target.value)} spellCheck={false} />
        ) : (
          <textarea className="mono" rows={16} value={text} onChange={(event) => setText(event.target.value)} spellCheck={false} />
        )}
      </label>
      <div className="dialog-actions">
        <button type="button" className="ghost" onClick={onCancel}>
          Cancel
        </button>
        <button
          type="button"
          className="primary"
          disabled={unchanged || (isCommand && text.trim() === '')}
          onClick={() => onSave(isCommand ? { command: text } : { content: text })}
        >
          Save my version
        </button>
      </div>
    </Dialog>
  );
}
