import { useState } from 'react';
import { useApi, type PolicyValue } from '../api.js';
import { ErrorBox } from './error-box.js';

/** Under Electron the preload offers the OS folder picker (electron/folder-picker.ts); a browser tab has none. */
interface FolderPickerSeam {
  pickFolder(): Promise<string | null>;
}
function folderPicker(): FolderPickerSeam | null {
  const shell = (globalThis as { executorShell?: Partial<FolderPickerSeam> }).executorShell;
  return shell && typeof shell.pickFolder === 'function' ? (shell as FolderPickerSeam) : null;
}

/** "Not now" holds for this window's session: the next window with no root asks again, as it should. */
const SKIPPED_KEY = 'executor.first-run-root-skipped';
function skippedBefore(): boolean {
  try {
    return sessionStorage.getItem(SKIPPED_KEY) === '1';
  } catch {
    return false;
  }
}

/**
 * The first run's question: with no workspace root every file step is CRITICAL and commands see no
 * project, so the window asks for one in plain words. A path field that takes `~` (expanded and
 * checked on the host: addWorkspaceRoot answers ROOT_REFUSED in words), and in the desktop app the
 * OS folder picker as well. It can be skipped; Settings changes the roots later.
 */
export function FirstRunRoot({ policy, onOpenSettings }: { policy: PolicyValue | undefined; onOpenSettings(): void }) {
  const api = useApi();
  const [typed, setTyped] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [skipped, setSkipped] = useState(skippedBefore);
  const [saved, setSaved] = useState<string | null>(null);
  const picker = folderPicker();

  if (saved) {
    return (
      <section className="card first-run first-run-done" aria-labelledby="first-run-title" role="status">
        <h2 id="first-run-title">Workspace root saved</h2>
        <p>
          Steps may now change files inside <code>{saved}</code>, and nothing outside it. Change this any time in{' '}
          <button type="button" className="link" onClick={onOpenSettings}>
            Settings
          </button>
          .
        </p>
        <button type="button" className="small ghost" onClick={() => setSaved(null)}>
          Dismiss
        </button>
      </section>
    );
  }
  if (!policy || policy.workspaceRoots.length > 0 || skipped) return null;

  const add = async (folder: string) => {
    setBusy(true);
    setError(null);
    try {
      const updated = await api.addWorkspaceRoot({ path: folder });
      setSaved(updated.workspaceRoots.at(-1) ?? folder);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const pick = async () => {
    setError(null);
    const folder = await picker!.pickFolder().catch((caught: unknown) => {
      setError(caught);
      return null;
    });
    if (folder) await add(folder);
  };
  const skip = () => {
    try {
      sessionStorage.setItem(SKIPPED_KEY, '1');
    } catch {
      /* private mode: skipped until reload */
    }
    setSkipped(true);
  };

  return (
    <section className="card first-run" aria-labelledby="first-run-title">
      <h2 id="first-run-title">Where do your agents work?</h2>
      <p>
        Name the folder of the project your agents work on. Executor lets steps change files only inside it (and the folders you add later),
        and commands run on a copy of it. Until you name one, <strong>every file step is CRITICAL</strong>: it waits for you and is shown as
        the most dangerous kind.
      </p>
      {picker ? (
        <p>
          <button type="button" className="primary" disabled={busy} onClick={() => void pick()}>
            Choose a folder…
          </button>
        </p>
      ) : null}
      <form
        className="first-run-form"
        onSubmit={(event) => {
          event.preventDefault();
          void add(typed);
        }}
      >
        <label htmlFor="first-run-path">{picker ? 'Or type its path' : 'Folder'} (a full path; ~ is your home folder)</label>
        <div className="first-run-row">
          <input
            id="first-run-path"
            type="text"
            value={typed}
            placeholder="~/projects/site"
            spellCheck={false}
            autoComplete="off"
            aria-describedby="first-run-hint"
            aria-invalid={error ? true : undefined}
            onChange={(event) => setTyped(event.target.value)}
          />
          <button type="submit" className={picker ? undefined : 'primary'} disabled={busy || typed.trim() === ''}>
            Use this folder
          </button>
        </div>
        <p id="first-run-hint" className="muted">
          Not your whole home folder, not / and not a system folder: one project, like ~/projects/site.
        </p>
      </form>
      <ErrorBox error={error} />
      <p>
        <button type="button" className="ghost" onClick={skip}>
          Not now
        </button>{' '}
        <span className="muted">You can add or change roots later in Settings.</span>
      </p>
    </section>
  );
}
