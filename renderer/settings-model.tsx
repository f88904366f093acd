import { useEffect, useState } from 'react';
import {
  MODEL_PROVIDERS,
  type ModelCheck,
  type ModelProvider,
  type ModelSettingsInput,
  type ModelSettingsView,
} from '../src/domain/model-settings.js';
import { useApi, useLoaded } from './api.js';
import { ErrorBox } from './components/error-box.js';

type SettingsInput = ModelSettingsInput;

interface ModelDraft {
  provider: ModelProvider;
  baseUrl: string;
  model: string;
  stream: boolean;
}

const PROVIDER_WORDS: Record<ModelProvider, string> = {
  openai: 'OpenAI-compatible (Ollama, LM Studio, llama.cpp, vLLM, OpenAI, OpenRouter…)',
  anthropic: 'Anthropic',
};
const ADDRESS_HINT: Record<ModelProvider, string> = {
  openai: 'http://127.0.0.1:11434/v1 for Ollama; empty for api.openai.com',
  anthropic: 'empty for api.anthropic.com',
};

function draftOf(view: ModelSettingsView | undefined): ModelDraft {
  const settings = view?.settings;
  return {
    provider: settings?.provider ?? 'openai',
    baseUrl: settings?.baseUrl ?? '',
    model: settings?.model ?? '',
    stream: settings?.stream ?? false,
  };
}

/** The draft as settings: numbers the form does not show (timeout, retries) keep their saved values. */
function settingsOf(draft: ModelDraft, saved: ModelSettingsView['settings']): SettingsInput {
  const keep = saved && saved.provider === draft.provider ? { timeoutMs: saved.timeoutMs, maxRetries: saved.maxRetries } : {};
  const settings: SettingsInput = { provider: draft.provider, model: draft.model.trim(), stream: draft.stream, ...keep };
  if (draft.baseUrl.trim()) settings.baseUrl = draft.baseUrl.trim();
  for (const name of Object.keys(settings) as Array<keyof SettingsInput>) if (settings[name] === undefined) delete settings[name];
  return settings;
}

/**
 * Settings → Model: the model agent runs talk to. The key field is write-only: the host never sends
 * a key back, only whether one is kept, so the field is always empty and says so.
 */
export function ModelSettingsCard() {
  const api = useApi();
  // A key set from the CLI is a model.key_set record; settings saved anywhere are a policy change.
  const loaded = useLoaded(() => api.getModelSettings(), [api], ['policy', 'audit']);
  const view = loaded.data;
  const [draft, setDraft] = useState<ModelDraft>(() => draftOf(view));
  const [touched, setTouched] = useState(false);
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState<null | 'saving' | 'checking' | 'key'>(null);
  const [error, setError] = useState<unknown>(null);
  const [check, setCheck] = useState<ModelCheck | null>(null);
  const [notice, setNotice] = useState('');

  // Settings saved elsewhere (the CLI, another window) show here unless the person is editing.
  useEffect(() => {
    if (!touched) setDraft(draftOf(view));
  }, [view, touched]);

  const edit = (change: Partial<ModelDraft>) => {
    setTouched(true);
    setCheck(null);
    setDraft({ ...draft, ...change });
  };
  const run = async (what: 'saving' | 'checking' | 'key', work: () => Promise<void>) => {
    setBusy(what);
    setError(null);
    setNotice('');
    try {
      await work();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(null);
    }
  };
  const save = () =>
    run('saving', async () => {
      await api.setModelSettings({ settings: settingsOf(draft, view?.settings ?? null) });
      setTouched(false);
      setNotice('Model saved and recorded in the audit log.');
      loaded.reload();
    });
  const saveKey = (value: string | null) =>
    run('key', async () => {
      await api.setModelKey({ provider: draft.provider, key: value });
      setKey('');
      setNotice(value === null ? 'Key removed.' : 'Key kept, sealed; it is never shown again.');
      loaded.reload();
    });
  const runCheck = () =>
    run('checking', async () => {
      setCheck(null);
      // What the form shows is checked, saved or not, with the key typed if there is one.
      setCheck(await api.checkModel({ settings: settingsOf(draft, view?.settings ?? null), ...(key.trim() ? { key } : {}) }));
    });

  const keyKept = view?.keySet[draft.provider] ?? false;
  const canSave = draft.model.trim().length > 0 && busy === null;
  return (
    <section className="card" aria-labelledby="model-head">
      <h2 id="model-head">Model</h2>
      <p className="muted small">
        The model agent runs talk to. Saved in policy.json (<code>model</code>); the key is kept apart, sealed like the audit keys.
      </p>
      <ErrorBox error={error ?? loaded.error} onDismiss={() => setError(null)} />
      <form
        className="model-form"
        onSubmit={(event) => {
          event.preventDefault();
          if (canSave) void save();
        }}
      >
        <label htmlFor="model-provider">Provider</label>
        <select id="model-provider" value={draft.provider} onChange={(event) => edit({ provider: event.target.value as ModelProvider })}>
          {MODEL_PROVIDERS.map((provider) => (
            <option key={provider} value={provider}>
              {PROVIDER_WORDS[provider]}
            </option>
          ))}
        </select>
        <label htmlFor="model-address">Address</label>
        <input
          id="model-address"
          type="url"
          spellCheck={false}
          placeholder={ADDRESS_HINT[draft.provider]}
          value={draft.baseUrl}
          onChange={(event) => edit({ baseUrl: event.target.value })}
        />
        <label htmlFor="model-name">Model name</label>
        <input
          id="model-name"
          type="text"
          spellCheck={false}
          placeholder={draft.provider === 'anthropic' ? 'claude-sonnet-4-5' : 'llama3.1'}
          value={draft.model}
          onChange={(event) => edit({ model: event.target.value })}
        />
        <label className="inline">
          <input type="checkbox" checked={draft.stream} onChange={(event) => edit({ stream: event.target.checked })} /> Stream answers as
          they come
        </label>
        <div className="actions">
          <button type="submit" className="primary" disabled={!canSave || !touched}>
            {busy === 'saving' ? 'Saving…' : 'Save model'}
          </button>
          <button type="button" onClick={() => void runCheck()} disabled={busy !== null || !draft.model.trim()}>
            {busy === 'checking' ? 'Checking…' : 'Check'}
          </button>
        </div>
      </form>
      <form
        className="model-key-form"
        onSubmit={(event) => {
          event.preventDefault();
          if (key.trim()) void saveKey(key);
        }}
      >
        <label htmlFor="model-key">API key for {draft.provider === 'openai' ? 'the OpenAI-compatible server' : 'Anthropic'}</label>
        <input
          id="model-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          placeholder={
            keyKept ? 'A key is kept (never shown). Type a new one to replace it.' : 'No key kept. Local servers such as Ollama need none.'
          }
          value={key}
          onChange={(event) => setKey(event.target.value)}
        />
        <div className="actions">
          <button type="submit" disabled={!key.trim() || busy !== null}>
            {busy === 'key' ? 'Keeping…' : 'Keep key'}
          </button>
          {keyKept ? (
            <button type="button" className="ghost" disabled={busy !== null} onClick={() => void saveKey(null)}>
              Remove key
            </button>
          ) : null}
        </div>
      </form>
      <div role="status" aria-live="polite" className="model-status">
        {check ? (
          <p className={check.ok ? 'model-check ok' : 'model-check warning'} data-testid="model-check">
            {check.ok ? `Works: ${check.message}` : `Not working: ${check.message}`}
          </p>
        ) : null}
        {notice ? <p className="muted small">{notice}</p> : null}
      </div>
    </section>
  );
}
