import { useEffect, useMemo, useState } from 'react';
import type { SkillRecord } from '../../src/domain/skill.js';
import type { StepRecord } from '../../src/domain/step-record.js';
import { useApi, useLoaded, type PolicyValue } from '../api.js';
import { CodeBlock } from '../components/code-view.js';
import { CopyId, shortId } from '../components/copy-id.js';
import { Dialog } from '../components/dialog.js';
import { ErrorBox } from '../components/error-box.js';
import { InvisibleWarning, MarkedText, markedPlainText } from '../components/marked-text.js';
import { formValuesOf, SkillForm, type SkillFormValues } from '../components/skill-form.js';
import { useKeys } from '../keys.js';
import { callsAgainstDeclared, compactJson, skillNameFrom, skillStateTone, skillStateWords } from '../skill-text.js';
import { formatTime } from '../time-format.js';

/*
 * Skills: every version of every skill an agent (or the person) proposed, where it stands in its
 * pipeline (quarantine, awaiting approval, trial, active, or stopped and why), and what the person
 * decides on: the code, its schemas, what it may call and how long, each example with what it gave
 * in quarantine, and the calls it made against those it declared. `#skills?skill=<id>` opens one;
 * `#skills?save=<stepId>` opens "Save as skill" for an executed runCode step (History, the queue's
 * repetition hint).
 */

function hashParams(): URLSearchParams {
  const hash = location.hash.replace(/^#\/?/, '');
  return new URLSearchParams(hash.includes('?') ? hash.slice(hash.indexOf('?') + 1) : '');
}

type Pending = { kind: 'reject' | 'disable' | 'edit'; skill: SkillRecord } | { kind: 'save'; stepId: string } | null;

export function SkillsView({ active, policy }: { active: boolean; policy: PolicyValue | undefined }) {
  const api = useApi();
  // A trial use is an audit record, not a state change: the counts follow the log.
  const listed = useLoaded(() => api.listSkills({}), [], ['step', 'audit']);
  const [selectedId, setSelectedId] = useState<string | null>(() => hashParams().get('skill'));
  const [pending, setPending] = useState<Pending>(() => {
    const save = hashParams().get('save');
    return save ? { kind: 'save', stepId: save } : null;
  });
  const [error, setError] = useState<unknown>(null);
  // What this window last did, and to which skill in which state: said until that skill moves on.
  const [status, setStatusValue] = useState<{ text: string; skillId?: string; state?: SkillRecord['state'] }>({ text: '' });
  const setStatus = (text: string, about?: SkillRecord) => setStatusValue({ text, skillId: about?.skillId, state: about?.state });
  const [busy, setBusy] = useState(false);

  // A skill's state changes on the host (a trial use, the stop switch, another window): read the list again.
  useEffect(() => {
    let off: (() => void) | undefined;
    let cancelled = false;
    void api
      .on('skill', (event) => {
        // What this window last did may no longer be so (a trial use disabled it): the detail says the state now.
        setStatusValue((previous) => (previous.skillId === event.skillId && previous.state !== event.state ? { text: '' } : previous));
        listed.reload();
      })
      .then(
        (unsubscribe) => (cancelled ? unsubscribe() : (off = unsubscribe)),
        () => undefined,
      );
    return () => {
      cancelled = true;
      off?.();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api]);

  useEffect(() => {
    const onHash = () => {
      if (!location.hash.startsWith('#skills')) return;
      const params = hashParams();
      const skill = params.get('skill');
      if (skill) setSelectedId(skill);
      const save = params.get('save');
      if (save) setPending({ kind: 'save', stepId: save });
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const skills = useMemo(() => listed.data?.skills ?? [], [listed.data]);
  const selected = skills.find((skill) => skill.skillId === selectedId) ?? skills[0] ?? null;
  const select = (skillId: string) => {
    if (skillId !== selectedId) setStatus('');
    setSelectedId(skillId);
    // Another skill, or the one just decided on: its name and state line are at the top of the pane.
    document.getElementById('skill-detail')?.scrollTo({ top: 0 });
    history.replaceState(null, '', `#skills?${new URLSearchParams({ skill: skillId }).toString()}`);
  };
  const closeForm = () => {
    setPending(null);
    if (hashParams().get('save')) history.replaceState(null, '', selected ? `#skills?skill=${selected.skillId}` : '#skills');
  };

  useKeys(
    {
      j: () => move(1),
      k: () => move(-1),
      Enter: () => document.getElementById('skill-detail')?.focus(),
    },
    active && pending === null,
  );
  function move(by: number) {
    if (skills.length === 0) return;
    const at = selected ? skills.indexOf(selected) : -1;
    const next = skills[Math.min(skills.length - 1, Math.max(0, at + by))]!;
    select(next.skillId);
    document.getElementById(`skill-item-${next.skillId}`)?.focus();
  }

  const act = async (doing: string, done: string, run: () => Promise<SkillRecord>) => {
    setBusy(true);
    setError(null);
    setStatus(`${doing}…`);
    try {
      const result = await run();
      select(result.skillId);
      setStatus(`${done} ${result.name} v${result.version}.`, result);
      listed.reload();
    } catch (caught) {
      setStatus('');
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  const names = new Set(skills.map((skill) => skill.name));
  return (
    <div className="split">
      <section className="list-pane" aria-label="Skills">
        <header className="pane-head">
          <h1>Skills</h1>
          <span className="muted">
            {names.size === 0
              ? 'None yet'
              : `${names.size} skill${names.size === 1 ? '' : 's'}, ${skills.length} version${skills.length === 1 ? '' : 's'}`}
          </span>
        </header>
        <ErrorBox error={listed.error} />
        {skills.length === 0 && listed.data ? (
          <div className="empty">
            <p>No skills yet.</p>
            <p className="muted">
              An agent proposes one with propose_skill, or you save an executed runCode step as one from History. Each goes through
              quarantine and validation, then waits here for your approval.
            </p>
          </div>
        ) : (
          <ul className="item-list">
            {skills.map((skill) => (
              <li key={skill.skillId}>
                <button
                  type="button"
                  id={`skill-item-${skill.skillId}`}
                  className={`item ${skill.skillId === selected?.skillId ? 'selected' : ''}`}
                  aria-current={skill.skillId === selected?.skillId ? 'true' : undefined}
                  onClick={() => select(skill.skillId)}
                >
                  <span className="item-text">
                    <span className="item-title">
                      <MarkedText text={skill.name} /> <span className="muted">v{skill.version}</span>
                    </span>
                    <span className={`item-sub skill-state skill-state-${skillStateTone(skill.state)}`} data-testid="skill-state">
                      <MarkedText text={skillStateWords(skill)} />
                    </span>
                  </span>
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      <section className="detail-pane" id="skill-detail" tabIndex={-1} aria-label="Selected skill">
        <div className="status-line" role="status" aria-live="polite">
          {status.text}
        </div>
        <ErrorBox error={error} onDismiss={() => setError(null)} />
        {selected ? (
          <SkillDetail
            skill={selected}
            versions={skills.filter((skill) => skill.name === selected.name)}
            policy={policy}
            busy={busy}
            onApprove={() =>
              void act('Approving', 'Approved', () => api.approveSkill({ skillId: selected.skillId, codeHash: selected.codeHash }))
            }
            onRollback={() => void act('Rolling back', 'Rolled back to', () => api.rollbackSkill({ skillId: selected.skillId }))}
            onRecheck={() => void act('Checking again', 'Checked', () => api.recheckSkill({ skillId: selected.skillId }))}
            onReject={() => setPending({ kind: 'reject', skill: selected })}
            onDisable={() => setPending({ kind: 'disable', skill: selected })}
            onEdit={() => setPending({ kind: 'edit', skill: selected })}
            onSelect={select}
          />
        ) : (
          <p className="muted">Select a skill to see its code, its examples and what it may do.</p>
        )}
      </section>
      {pending?.kind === 'reject' || pending?.kind === 'disable' ? (
        <ReasonDialog
          skill={pending.skill}
          kind={pending.kind}
          onCancel={() => setPending(null)}
          onSend={(reason) => {
            const skill = pending.skill;
            setPending(null);
            void act(pending.kind === 'reject' ? 'Rejecting' : 'Disabling', pending.kind === 'reject' ? 'Rejected' : 'Disabled', () =>
              pending.kind === 'reject'
                ? api.rejectSkill({ skillId: skill.skillId, reason })
                : api.disableSkill({ skillId: skill.skillId, ...(reason ? { reason } : {}) }),
            );
          }}
        />
      ) : null}
      {pending?.kind === 'edit' ? (
        <SkillForm
          title={`Edit ${markedPlainText(pending.skill.name)} v${pending.skill.version}`}
          initial={formValuesOf(pending.skill)}
          codeEditable
          nameEditable={false}
          note={`Your edit becomes v${Math.max(...skills.filter((skill) => skill.name === pending.skill.name).map((skill) => skill.version)) + 1}: a new skill that runs its examples in quarantine and is validated again, then waits for your approval. v${pending.skill.version} stays as it is.`}
          submitLabel="Send to quarantine"
          onCancel={() => setPending(null)}
          onSubmit={async (fields) => {
            const { name: _name, ...change } = fields;
            const edited = await api.editSkill({ skillId: pending.skill.skillId, change: change as never });
            setPending(null);
            select(edited.skillId);
            setStatus(`Edited: your edit is ${edited.name} v${edited.version}.`, edited);
            listed.reload();
          }}
        />
      ) : null}
      {pending?.kind === 'save' ? (
        <SaveAsSkill
          stepId={pending.stepId}
          onCancel={closeForm}
          onSaved={(saved) => {
            setPending(null);
            select(saved.skillId);
            setStatus(`Saved as ${saved.name} v${saved.version}.`, saved);
            listed.reload();
          }}
        />
      ) : null}
    </div>
  );
}

function SkillDetail({
  skill,
  versions,
  policy,
  busy,
  onApprove,
  onReject,
  onDisable,
  onEdit,
  onRollback,
  onRecheck,
  onSelect,
}: {
  skill: SkillRecord;
  versions: SkillRecord[];
  policy: PolicyValue | undefined;
  busy: boolean;
  onApprove(): void;
  onReject(): void;
  onDisable(): void;
  onEdit(): void;
  onRollback(): void;
  onRecheck(): void;
  onSelect(skillId: string): void;
}) {
  const calls = callsAgainstDeclared(skill);
  const newestVersion = Math.max(...versions.map((version) => version.version));
  // A version once approved (it holds a pin) and now stopped may be used again, through a new trial.
  const rollbackable = skill.pin !== null && (skill.state === 'superseded' || skill.state === 'disabled');
  const usable = skill.state === 'trial' || skill.state === 'active';
  const trialUses = policy?.skills.trialUses ?? skill.trial.required;
  const trialHours = policy?.skills.trialMinHours ?? 24;
  const passed = skill.exampleResults.filter((result) => result.ok).length;
  const stateWords = skillStateWords(skill);
  return (
    <article className="skill-detail" aria-labelledby="skill-title">
      <header className="detail-head">
        <h2 id="skill-title">
          <MarkedText text={skill.name} /> v{skill.version}
        </h2>
        {/* The badge says the state; the line under it, where there is more to say (how far the trial is, why it stopped). */}
        <span
          className={`skill-badge skill-state-${skillStateTone(skill.state)}`}
          data-testid={stateWords === SHORT_STATE[skill.state] ? 'skill-detail-state' : undefined}
        >
          {SHORT_STATE[skill.state]}
        </span>
      </header>
      {stateWords !== SHORT_STATE[skill.state] ? (
        <p className={`skill-state-line skill-state-${skillStateTone(skill.state)}`} data-testid="skill-detail-state">
          <MarkedText text={stateWords} />
        </p>
      ) : null}
      <InvisibleWarning texts={[skill.name, skill.purpose, skill.code]} what="name, purpose or code of this skill" />
      <dl className="facts">
        <dt>Purpose</dt>
        <dd className="break">
          <MarkedText text={skill.purpose} />
        </dd>
        <dt>Proposed by</dt>
        <dd className="break">
          <MarkedText text={skill.proposedBy} /> · {formatTime(skill.createdAt)}
          {skill.fromStepId ? (
            <>
              {' '}
              · saved from step <CopyId id={skill.fromStepId} what="step id" />
            </>
          ) : null}
        </dd>
        <dt>Skill</dt>
        <dd className="break">
          <CopyId id={skill.skillId} what="skill id" keep={Number.POSITIVE_INFINITY} />
        </dd>
        <dt>Checked</dt>
        <dd data-testid="skill-checks">
          {skill.exampleResults.length === 0
            ? 'its examples have not run'
            : `quarantine: ${passed} of ${skill.exampleResults.length} examples passed · validation: ${
                calls.made.length === 0
                  ? 'no calls made'
                  : `${calls.made.filter((made) => made.declared).length} of ${calls.made.length} calls made were declared`
              }`}
        </dd>
        <dt>Code sha256</dt>
        <dd className="break">
          <code data-testid="skill-code-hash">{skill.codeHash}</code>
        </dd>
        {skill.pin ? (
          <>
            <dt>Approved</dt>
            <dd className="break">
              by <MarkedText text={skill.pin.approvedBy} /> at {formatTime(skill.pin.approvedAt)}
              {skill.pin.codeHash === skill.codeHash ? ', pinned to this code' : ' — the pinned code is not this code: it will not run'}
            </dd>
          </>
        ) : null}
        {/* In trial the line under the name says it; after, what the trial was. */}
        {skill.state !== 'trial' && skill.trial.since ? (
          <>
            <dt>Trial</dt>
            <dd>
              {skill.trial.uses} of {skill.trial.required} watched uses
              {skill.trial.untilAt ? `, and until ${formatTime(skill.trial.untilAt)}` : ''}
              {skill.state === 'active' ? ' (passed)' : ''}
            </dd>
          </>
        ) : null}
        {versions.length > 1 ? (
          <>
            <dt>Versions</dt>
            <dd>
              {versions.map((version, index) => (
                <span key={version.skillId}>
                  {index > 0 ? ' · ' : ''}
                  {version.skillId === skill.skillId ? (
                    <strong>v{version.version}</strong>
                  ) : (
                    <button type="button" className="link-button" onClick={() => onSelect(version.skillId)}>
                      v{version.version} ({skillStateWords(version).split(':')[0]})
                    </button>
                  )}
                </span>
              ))}
            </dd>
          </>
        ) : null}
      </dl>

      <div className="actions skill-actions">
        {skill.state === 'awaiting_owner' ? (
          <>
            <button type="button" className="primary" disabled={busy} onClick={onApprove}>
              Approve v{skill.version}
            </button>
            <button type="button" className="danger" disabled={busy} onClick={onReject}>
              Reject…
            </button>
          </>
        ) : null}
        {usable ? (
          <button type="button" className="danger" disabled={busy} onClick={onDisable}>
            Disable…
          </button>
        ) : null}
        {skill.state === 'draft' ? (
          <button type="button" className="primary" disabled={busy} onClick={onRecheck}>
            Check again
          </button>
        ) : null}
        {rollbackable ? (
          <button type="button" disabled={busy} onClick={onRollback}>
            Roll back to v{skill.version}
          </button>
        ) : null}
        <button type="button" disabled={busy} onClick={onEdit}>
          Edit…
        </button>
      </div>
      {skill.state === 'awaiting_owner' ? (
        <p className="notice" data-testid="approval-pins">
          Approving pins this code (sha256 <code>{skill.codeHash.slice(0, 12)}…</code>) and the capabilities and budget below. Agents may
          then use it without asking you; any change to them is a new version that waits for you again, and a stored copy that no longer
          matches is refused. Its first {trialUses} uses, and at least {trialHours} hours, are a trial: an error, a budget overrun, an
          output outside its schema or a call it did not declare disables it and tells you.
        </p>
      ) : null}
      {rollbackable && newestVersion !== skill.version ? (
        <p className="muted small-note">Rolling back checks its pin again and starts a new trial; the version in use now is set aside.</p>
      ) : null}

      <h3>Code</h3>
      <CodeBlock
        // The block marks invisible and direction-changing characters itself, token by token.
        code={skill.code}
        language="javascript"
        label={`Code of ${markedPlainText(skill.name)} v${skill.version}`}
      />

      <div className="skill-columns">
        <section aria-label="Input schema">
          <h3>Input schema</h3>
          <pre className="output-excerpt schema-text">
            <MarkedText text={JSON.stringify(skill.inputSchema, null, 2)} />
          </pre>
        </section>
        <section aria-label="Output schema">
          <h3>Output schema</h3>
          <pre className="output-excerpt schema-text">
            <MarkedText text={JSON.stringify(skill.outputSchema, null, 2)} />
          </pre>
        </section>
      </div>

      <h3>Capabilities and budget</h3>
      <ul className="reasons" data-testid="skill-capabilities">
        <li>
          May call:{' '}
          {calls.declared.length === 0 ? (
            'nothing (no network, no files, no knowledge base)'
          ) : (
            <MarkedText text={calls.declared.join(', ')} />
          )}
        </li>
        <li>
          Each use: at most {skill.budget.timeMs} ms and {skill.budget.calls} call{skill.budget.calls === 1 ? '' : 's'}
        </li>
      </ul>

      <h3>
        Quarantine: {passed} of {skill.exampleResults.length} examples passed
      </h3>
      {skill.exampleResults.length === 0 ? (
        <p className="muted">Its examples have not run (it stopped before quarantine).</p>
      ) : (
        <table className="skill-examples" aria-label="Examples and their results in quarantine">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Input</th>
              <th scope="col">Result</th>
              <th scope="col">Took</th>
              <th scope="col">Calls</th>
            </tr>
          </thead>
          <tbody>
            {skill.exampleResults.map((result, index) => (
              <tr key={index} className={result.ok ? '' : 'failed'}>
                <td>{index + 1}</td>
                <td>
                  <code className="break">
                    <MarkedText text={compactJson(result.input)} />
                  </code>
                </td>
                <td>
                  {result.ok ? (
                    <>
                      <span className="ok-mark">✓</span>{' '}
                      {result.output !== undefined || result.code === undefined ? (
                        <code className="break">
                          <MarkedText text={compactJson(result.output)} />
                        </code>
                      ) : null}
                      {/* Passed without being judged on its data: quarantine answered its reads from nothing, or recorded its request. */}
                      {result.code !== undefined ? (
                        <span className="muted">
                          {' '}
                          <MarkedText text={`${result.code}: ${result.message ?? ''}`} />
                        </span>
                      ) : null}
                    </>
                  ) : (
                    <span className="bad-mark">
                      ✗ <MarkedText text={`${result.code ?? 'failed'}: ${result.message ?? ''}`} />
                    </span>
                  )}
                </td>
                <td>{Math.round(result.durationMs)} ms</td>
                <td>{result.calls.length === 0 ? 'none' : result.calls.length}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h3>Validation: calls made against calls declared</h3>
      <div data-testid="skill-validation">
        {calls.made.length === 0 ? (
          <p>
            The examples made no calls{calls.declared.length > 0 ? `; it declared ${calls.declared.join(', ')}` : ', and it declared none'}.
          </p>
        ) : (
          <ul className="reasons">
            {calls.made.map((made) => (
              <li key={made.call}>
                <code>
                  <MarkedText text={made.call} />
                </code>{' '}
                ×{made.times} — {made.declared ? 'declared' : <strong className="bad-mark">not declared</strong>}
              </li>
            ))}
          </ul>
        )}
        {skill.state === 'rejected' && /^validation: /.test(skill.reason ?? '') ? (
          <p className="warning">
            <MarkedText text={skill.reason!} />
          </p>
        ) : null}
      </div>
    </article>
  );
}

/** The badge beside the name; the line under it says the whole state and why. */
const SHORT_STATE: Record<SkillRecord['state'], string> = {
  draft: 'check stopped',
  quarantine: 'in quarantine',
  validation: 'in quarantine',
  awaiting_owner: 'awaiting your approval',
  trial: 'in trial',
  active: 'active',
  rejected: 'rejected',
  disabled: 'disabled',
  superseded: 'superseded',
};

function ReasonDialog({
  skill,
  kind,
  onCancel,
  onSend,
}: {
  skill: SkillRecord;
  kind: 'reject' | 'disable';
  onCancel(): void;
  onSend(reason: string): void;
}) {
  const [reason, setReason] = useState('');
  const required = kind === 'reject';
  const verb = kind === 'reject' ? 'Reject' : 'Disable';
  return (
    <Dialog title={`${verb} ${markedPlainText(skill.name)} v${skill.version}?`} onCancel={onCancel}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!required || reason.trim()) onSend(reason.trim());
        }}
      >
        <p className="muted small-note">
          {kind === 'reject'
            ? 'A rejected skill never runs. The agent that proposed it is told your reason.'
            : 'A disabled skill is offered to no agent until you roll back to it (which starts a new trial).'}
        </p>
        <label htmlFor="skill-reason">Reason{required ? '' : ' (optional)'}</label>
        <textarea
          id="skill-reason"
          autoFocus
          required={required}
          maxLength={2000}
          rows={3}
          value={reason}
          onChange={(event) => setReason(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && !event.nativeEvent.isComposing) {
              event.preventDefault();
              if (!required || reason.trim()) onSend(reason.trim());
            }
          }}
        />
        <div className="dialog-actions">
          <button type="button" className="ghost" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className="danger" disabled={required && !reason.trim()}>
            {verb} skill
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** The output schema a step's result suggests: its JSON type, so the examples are checked against what the code gave. */
function outputSchemaOf(record: StepRecord): Record<string, unknown> {
  const value = (record.result as { value?: unknown } | null)?.value;
  if (value === undefined) return {};
  const type = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return ['string', 'number', 'boolean', 'null', 'array', 'object'].includes(type) ? { type } : {};
}

function SaveAsSkill({ stepId, onCancel, onSaved }: { stepId: string; onCancel(): void; onSaved(skill: SkillRecord): void }) {
  const api = useApi();
  const [record, setRecord] = useState<StepRecord | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let alive = true;
    api.getStep({ stepId }).then(
      (loaded) => alive && setRecord(loaded),
      (caught: unknown) => alive && setError(caught),
    );
    return () => {
      alive = false;
    };
  }, [api, stepId]);
  if (error || !record) {
    return (
      <Dialog title="Save as skill" onCancel={onCancel}>
        {error ? <ErrorBox error={error} /> : <p className="muted">Reading the step…</p>}
        <div className="dialog-actions">
          <button type="button" className="ghost" onClick={onCancel} autoFocus>
            Close
          </button>
        </div>
      </Dialog>
    );
  }
  const args = record.step.args as { code?: string; purpose?: string; timeoutMs?: number; capabilities?: unknown };
  const purpose = args.purpose ?? record.step.meta.purpose ?? '';
  const initial: SkillFormValues = {
    name: skillNameFrom(purpose),
    purpose,
    code: args.code ?? '',
    inputSchema: JSON.stringify({ type: 'object' }, null, 2),
    outputSchema: JSON.stringify(outputSchemaOf(record), null, 2),
    capabilities: JSON.stringify(args.capabilities ?? {}, null, 2),
    budget: JSON.stringify({ timeMs: Math.min(5000, Math.max(100, args.timeoutMs ?? 2000)), calls: 0 }, null, 2),
    examples: JSON.stringify([{}, {}, {}], null, 2),
  };
  return (
    <SkillForm
      title="Save as skill"
      initial={initial}
      codeEditable={false}
      nameEditable
      note={`From step ${shortId(stepId)}: its code as it ran, proposed as a skill. The examples run in quarantine and what it calls is checked against what it declares; then it waits in Skills for your approval.`}
      submitLabel="Save and run quarantine"
      onCancel={onCancel}
      onSubmit={async (fields) => {
        const { code: _code, ...given } = fields;
        onSaved(await api.skillFromStep({ stepId, fields: given }));
      }}
    />
  );
}
