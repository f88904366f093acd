import { useEffect, useState } from 'react';
import { describeRule, type RememberedRule } from '../../src/domain/remembered-rule.js';
import { useApi, type PolicyValue } from '../api.js';
import { Dialog } from '../components/dialog.js';
import { ErrorBox } from '../components/error-box.js';
import { formatTime } from '../step-text.js';

const lines = (text: string) => text.split('\n').map((line) => line.trim()).filter(Boolean);

interface Draft {
  workspaceRoots: string;
  autoApprove: PolicyValue['autoApprove'];
  secretGlobs: string;
  commandsAllow: string;
  commandsDeny: string;
  allowHosts: string;
}

function draftOf(policy: PolicyValue): Draft {
  return {
    workspaceRoots: policy.workspaceRoots.join('\n'),
    autoApprove: policy.autoApprove,
    secretGlobs: policy.secretGlobs.join('\n'),
    commandsAllow: policy.commands.allow.join('\n'),
    commandsDeny: policy.commands.deny.join('\n'),
    allowHosts: policy.network.allowHosts.join('\n'),
  };
}

function policyOf(base: PolicyValue, draft: Draft): PolicyValue {
  return {
    ...base,
    workspaceRoots: lines(draft.workspaceRoots),
    autoApprove: draft.autoApprove,
    secretGlobs: lines(draft.secretGlobs),
    commands: { allow: lines(draft.commandsAllow), deny: lines(draft.commandsDeny) },
    network: { allowHosts: lines(draft.allowHosts) },
  };
}

/** Every change goes through setPolicy: validated by the core, saved atomically, recorded in the audit log. */
export function SettingsView({ policy, keyInfo }: { policy: PolicyValue | undefined; keyInfo: { keyId: string; epoch: number } | null }) {
  const api = useApi();
  const [draft, setDraft] = useState<Draft | null>(policy ? draftOf(policy) : null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const [saving, setSaving] = useState(false);
  const [removing, setRemoving] = useState<RememberedRule | null>(null);
  useEffect(() => {
    if (policy && draft === null) setDraft(draftOf(policy));
  }, [policy, draft]);

  if (!policy || !draft) return <p className="muted center">Loading the policy…</p>;
  const dirty = JSON.stringify(policyOf(policy, draft)) !== JSON.stringify(policy);

  const save = async (next: PolicyValue, what: string) => {
    setSaving(true);
    setError(null);
    try {
      const saved = await api.setPolicy({ policy: next });
      setDraft(draftOf(saved));
      setNotice(`${what} Saved and recorded in the audit log.`);
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };
  const field = (key: keyof Draft) => ({
    value: draft[key],
    onChange: (event: { target: { value: string } }) => setDraft({ ...draft, [key]: event.target.value }),
  });

  return (
    <div className="stack settings">
      <header className="pane-head">
        <h1>Settings</h1>
      </header>
      <div className="status-line" role="status" aria-live="polite">
        {saving ? <span className="progress">Saving…</span> : notice}
      </div>
      <ErrorBox error={error} onDismiss={() => setError(null)} />
      <section className="card" aria-labelledby="rules-head">
        <h2 id="rules-head">Remembered approvals</h2>
        {policy.remembered.length === 0 ? (
          <p className="muted">None. Use “Approve and remember…” in the Queue to add one.</p>
        ) : (
          <ul className="rule-list">
            {policy.remembered.map((rule) => (
              <li key={rule.id} className="rule">
                <p className="rule-words">{describeRule(rule)}</p>
                <p className="muted small">
                  <code>{rule.id}</code> · added {formatTime(rule.createdAt)}
                </p>
                <button type="button" className="small" aria-label={`Remove rule ${rule.id}`} onClick={() => setRemoving(rule)}>
                  Remove
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      <form
        className="settings-form"
        onSubmit={(event) => {
          event.preventDefault();
          void save(policyOf(policy, draft), 'Policy changed.');
        }}
      >
        <section className="card">
          <h2>Where steps may act</h2>
          <label htmlFor="roots">Workspace roots (one absolute path per line)</label>
          <textarea id="roots" rows={2} spellCheck={false} {...field('workspaceRoots')} />
          <label htmlFor="secrets">Secret-looking paths (globs; writes to them are HIGH risk)</label>
          <textarea id="secrets" rows={5} spellCheck={false} {...field('secretGlobs')} />
        </section>
        <section className="card">
          <h2>Consent</h2>
          <label htmlFor="auto-approve">Approve without asking up to</label>
          <select id="auto-approve" value={draft.autoApprove} onChange={(event) => setDraft({ ...draft, autoApprove: event.target.value as Draft['autoApprove'] })}>
            <option value="none">Nothing: always ask</option>
            <option value="LOW">LOW risk</option>
            <option value="MEDIUM">MEDIUM risk</option>
            <option value="HIGH">HIGH risk</option>
          </select>
          <p className="muted">CRITICAL steps are never approved, by anyone.</p>
        </section>
        <section className="card">
          <h2>Commands and network</h2>
          <div className="two-col">
            <div>
              <label htmlFor="cmd-allow">Allowed commands (one per line)</label>
              <textarea id="cmd-allow" rows={4} spellCheck={false} {...field('commandsAllow')} />
            </div>
            <div>
              <label htmlFor="cmd-deny">Denied commands (one per line)</label>
              <textarea id="cmd-deny" rows={4} spellCheck={false} {...field('commandsDeny')} />
            </div>
          </div>
          <label htmlFor="hosts">Network allowlist (one host per line)</label>
          <textarea id="hosts" rows={3} spellCheck={false} {...field('allowHosts')} />
        </section>
        <div className="actions sticky-actions">
          <button type="submit" className="primary" disabled={!dirty || saving}>
            Save policy
          </button>
          <button type="button" className="ghost" disabled={!dirty || saving} onClick={() => setDraft(draftOf(policy))}>
            Discard changes
          </button>
        </div>
      </form>
      <section className="card" aria-labelledby="signing-head">
        <h2 id="signing-head">Audit signing and sandbox</h2>
        <dl className="facts">
          <dt>Audit key id</dt>
          <dd>{keyInfo ? <><code>{keyInfo.keyId}</code> (epoch {keyInfo.epoch})</> : <span className="muted">Not known yet</span>}</dd>
          <dt>Key rotation</dt>
          <dd>
            Run <code>executor keys rotate</code> in a terminal; it asks for confirmation and records the rotation in the audit log.
          </dd>
          <dt>Sandbox</dt>
          <dd>
            <code>executor sandbox status</code> shows the Docker engine, image and limits.
          </dd>
        </dl>
      </section>
      {removing ? (
        <Dialog title="Remove this remembered approval?" onCancel={() => setRemoving(null)}>
          <p>{describeRule(removing)}</p>
          <p>After removal, such steps ask again.</p>
          <div className="dialog-actions">
            <button type="button" className="ghost" onClick={() => setRemoving(null)}>
              Cancel
            </button>
            <button
              type="button"
              className="danger"
              onClick={() => {
                const rule = removing;
                setRemoving(null);
                void save({ ...policy, remembered: policy.remembered.filter((other) => other.id !== rule.id) }, `Rule ${rule.id} removed.`);
              }}
            >
              Remove rule
            </button>
          </div>
        </Dialog>
      ) : null}
    </div>
  );
}
