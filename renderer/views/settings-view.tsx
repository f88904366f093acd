import { useEffect, useState } from 'react';
import { describeRule, isRuleExpired, type RememberedRule } from '../../src/domain/remembered-rule.js';
import type { MethodResult } from '../../src/ipc/protocol/methods.js';
import { useApi, useLoaded, type PolicyValue } from '../api.js';

type KeyStatus = MethodResult<'getKeyStatus'>;
import { Dialog } from '../components/dialog.js';
import { ErrorBox } from '../components/error-box.js';
import { formatTime } from '../step-text.js';
import { useFadingMessage } from '../components/toasts.js';
import { ModelSettingsCard } from '../settings-model.js';

const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

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
    // Spread first: keys the form does not edit (commands.effects) keep their values.
    commands: { ...base.commands, allow: lines(draft.commandsAllow), deny: lines(draft.commandsDeny) },
    network: { allowHosts: lines(draft.allowHosts) },
  };
}

type Environment = MethodResult<'getEnvironment'>;

/** Where the data lives and whether commands can run: read on opening Settings, and on demand. */
type EngineAccessValue = NonNullable<Environment['engine']['access']>;

/** How the engine is reached and trusted; a remote engine without verified TLS is said as loudly as the CLI says it. */
function engineAccessText(access: EngineAccessValue): string {
  const how =
    access.security === 'tls-verified'
      ? `TCP with TLS verified (certificates in ${access.certDir ?? '?'})`
      : access.security === 'ssh'
        ? 'SSH, host key checked against known_hosts'
        : access.security === 'insecure'
          ? `WITHOUT VERIFIED TLS: ${access.warning ?? ''}`
          : 'a socket on this machine';
  const files =
    access.workspace !== 'archive'
      ? 'is bind-mounted'
      : `travels to the engine as archives${access.engineMachine ? ` (the engine runs on “${access.engineMachine}”, not this machine)` : ''}`;
  return `${how}; the workspace ${files}`;
}

function SandboxCard({ policy }: { policy: PolicyValue }) {
  const api = useApi();
  const [environment, setEnvironment] = useState<Environment | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [checking, setChecking] = useState(false);
  const check = () => {
    setChecking(true);
    setError(null);
    api
      .getEnvironment()
      .then(setEnvironment, setError)
      .finally(() => setChecking(false));
  };
  useEffect(check, [api]);
  const limits = policy.sandbox;
  return (
    <section className="card" aria-labelledby="sandbox-head">
      <h2 id="sandbox-head">Sandbox and data</h2>
      <ErrorBox error={error} />
      <dl className="facts">
        <dt>Data directory</dt>
        <dd>{environment ? <code>{environment.dataDir}</code> : '…'}</dd>
        <dt>Docker engine</dt>
        <dd>
          {!environment
            ? 'checking…'
            : environment.engine.reachable
              ? `reachable at ${environment.engine.endpoint}: ${environment.engine.engine?.label ?? `Docker ${environment.engine.version ?? '?'}`}`
              : environment.engine.errorCode?.startsWith('ENGINE_')
                ? `NOT reached (${environment.engine.errorCode}): ${environment.engine.error ?? ''}`
                : `NOT reachable at ${environment.engine.endpoint}: commands and Python cannot run until Docker starts`}
        </dd>
        {environment?.engine.access ? (
          <>
            <dt>Engine access</dt>
            <dd>{engineAccessText(environment.engine.access)}</dd>
          </>
        ) : null}
        <dt>Sandbox image</dt>
        <dd>
          {!environment ? (
            '…'
          ) : environment.image.present ? (
            <>
              <code>{environment.image.tag}</code> <code className="hash">{environment.image.digest}</code>
            </>
          ) : (
            <>
              <code>{environment.image.tag}</code> is missing: run <code>executor sandbox image build</code>
            </>
          )}
        </dd>
        <dt>Container limits</dt>
        <dd>
          {limits.memoryMb} MB memory · {limits.cpus} CPU · {limits.pids} processes · {Math.round(limits.timeoutMs / 1000)} s · output{' '}
          {Math.round(limits.outputBytes / 1024)} KiB per stream
        </dd>
        <dt>Code worker limits</dt>
        <dd>
          {policy.lightSandbox.defaultTimeoutMs} ms · heap {policy.lightSandbox.maxHeapMb} MB · {policy.lightSandbox.maxCallsPerStep} tool
          calls per step
          {policy.lightSandbox.budget.enabled ? ` · at most ${policy.lightSandbox.budget.runsPerMinute} runs a minute` : ' · no budget'}
        </dd>
      </dl>
      <div className="actions">
        <button type="button" onClick={check} disabled={checking}>
          {checking ? 'Checking…' : 'Check again'}
        </button>
      </div>
      <p className="muted small">
        Limits are part of policy.json (<code>sandbox</code>, <code>lightSandbox</code>).
      </p>
    </section>
  );
}

/** Every change goes through setPolicy: validated by the core, saved atomically, recorded in the audit log. */
export function SettingsView({
  policy,
  keyStatus,
  keyError,
  onKeysChanged,
}: {
  policy: PolicyValue | undefined;
  keyStatus: KeyStatus | undefined;
  keyError: unknown;
  onKeysChanged(): void;
}) {
  const api = useApi();
  const [draft, setDraft] = useState<Draft | null>(policy ? draftOf(policy) : null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useFadingMessage();
  const [saving, setSaving] = useState(false);
  const [removing, setRemoving] = useState<RememberedRule | null>(null);
  const [rotating, setRotating] = useState(false);
  const ruleHits = useLoaded(() => api.listRuleHits(), [], ['audit', 'policy']);
  // The policy changed elsewhere (the first run's root, `executor roots add`, another window): a form
  // the person has not touched follows it, so saving it later cannot put the old roots back.
  const [draftFrom, setDraftFrom] = useState<PolicyValue | undefined>(policy);
  useEffect(() => {
    if (!policy || policy === draftFrom) return;
    const untouched = draft === null || !draftFrom || JSON.stringify(draft) === JSON.stringify(draftOf(draftFrom));
    if (untouched) setDraft(draftOf(policy));
    setDraftFrom(policy);
  }, [policy, draft, draftFrom]);

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
            {policy.remembered.map((rule) => {
              const expired = isRuleExpired(rule, new Date());
              const hits = ruleHits.data?.find((entry) => entry.ruleId === rule.id);
              return (
                <li key={rule.id} id={`rule-${rule.id}`} className={`rule ${expired ? 'expired' : ''}`} aria-label={`Rule ${rule.id}`}>
                  <p className="rule-words">
                    {expired ? <strong className="warning-inline">Expired: no longer approves anything. </strong> : null}
                    {describeRule(rule)}
                  </p>
                  {rule.madeBeforeScoping ? (
                    <p className="warning small">
                      Made before rules named their agent: it covers only steps you propose yourself, never an agent's. Remove it and
                      remember it again from an agent's step to cover that agent.
                    </p>
                  ) : null}
                  <p className="muted small rule-facts">
                    <code>{rule.id}</code> · added {formatTime(rule.createdAt)} ·{' '}
                    {rule.expiresAt ? `${expired ? 'expired' : 'expires'} ${formatTime(rule.expiresAt)}` : 'no expiry'} ·{' '}
                    <span data-testid="rule-hits">
                      {hits
                        ? `approved ${hits.hits} step${hits.hits === 1 ? '' : 's'}, last ${formatTime(hits.lastHitAt)} (${hits.lastStepId})`
                        : 'approved no step yet'}
                    </span>
                  </p>
                  <button type="button" className="small" aria-label={`Remove rule ${rule.id}`} onClick={() => setRemoving(rule)}>
                    Remove
                  </button>
                </li>
              );
            })}
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
          <label htmlFor="secrets">
            Secret-looking paths (globs; writes to them are HIGH risk, code never reads them; the built-in credential files always apply)
          </label>
          <textarea id="secrets" rows={5} spellCheck={false} {...field('secretGlobs')} />
        </section>
        <section className="card">
          <h2>Consent</h2>
          <label htmlFor="auto-approve">Approve without asking up to</label>
          <select
            id="auto-approve"
            value={draft.autoApprove}
            onChange={(event) => setDraft({ ...draft, autoApprove: event.target.value as Draft['autoApprove'] })}
          >
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
        <h2 id="signing-head">Audit signing</h2>
        <ErrorBox error={keyError} />
        {keyStatus?.protectionWarning ? (
          // Said plainly, above the facts: the keychain protects less than the word "keychain" suggests.
          <p className="warning" role="status">
            {keyStatus.protectionWarning}
          </p>
        ) : null}
        {keyStatus ? (
          <dl className="facts">
            <dt>Signing key id</dt>
            <dd>
              <code>{keyStatus.currentKeyId}</code> (epoch {keyStatus.epoch})
            </dd>
            <dt>Key protection</dt>
            <dd>
              {keyStatus.protection === 'os-keychain'
                ? 'OS keychain'
                : keyStatus.protectionWarning
                  ? 'Plain text (no OS keychain: see the warning above)'
                  : 'Plain file (no OS keychain available)'}{' '}
              · <code>{keyStatus.location}</code>
            </dd>
            <dt>Key chains</dt>
            <dd>
              {keyStatus.chains.map((chain) => (
                <span key={chain.keyId} className="chain">
                  <code>{chain.keyId}</code> since {formatTime(chain.createdAt)}
                  {chain.verificationKeyExported ? ' · verification key exported' : ''}
                </span>
              ))}
            </dd>
            <dt>Log id</dt>
            <dd>
              <code>{keyStatus.logId}</code>
            </dd>
          </dl>
        ) : null}
        <div className="actions">
          <button type="button" onClick={() => setRotating(true)}>
            Rotate signing key…
          </button>
        </div>
      </section>
      <ModelSettingsCard />
      <SandboxCard policy={policy} />
      {rotating ? (
        <Dialog title="Rotate the audit signing key?" onCancel={() => setRotating(false)}>
          <p>
            A new key chain starts now. Old records stay verifiable with the old chain; the rotation is recorded and signed under both keys.
          </p>
          <div className="dialog-actions">
            <button type="button" className="ghost" onClick={() => setRotating(false)}>
              Cancel
            </button>
            <button
              type="button"
              className="primary"
              onClick={() => {
                setRotating(false);
                setSaving(true);
                setError(null);
                api
                  .rotateKeys({ reason: 'rotated from the Settings view' })
                  .then((rotated) => {
                    setNotice(`Signing key rotated: ${rotated.previousKeyId} → ${rotated.keyId}. Recorded in the audit log.`);
                    onKeysChanged();
                  }, setError)
                  .finally(() => setSaving(false));
              }}
            >
              Rotate key
            </button>
          </div>
        </Dialog>
      ) : null}
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
