import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import type { MethodResult } from '../../../src/ipc/protocol/methods.js';
import { defaultPolicy } from '../../../src/policy/policy-file.js';
import { ApiContext, type PolicyValue } from '../../../renderer/api.js';
import { SettingsView } from '../../../renderer/views/settings-view.js';

// The view rendered to markup: no API call happens while rendering, so the client is never used.
const status = (protectionWarning: string | null): MethodResult<'getKeyStatus'> => ({
  logId: 'log-1',
  protection: protectionWarning ? 'plaintext' : 'os-keychain',
  protectionWarning,
  location: '/data/keys',
  currentKeyId: 'k1',
  epoch: 0,
  chains: [],
  anchor: null,
  lastCheckpointError: null,
});

function render(keyStatus: MethodResult<'getKeyStatus'>): string {
  return renderToStaticMarkup(
    <ApiContext.Provider value={{} as ExecutorClient}>
      <SettingsView policy={defaultPolicy() as PolicyValue} keyStatus={keyStatus} keyError={null} onKeysChanged={() => undefined} />
    </ApiContext.Provider>,
  );
}

describe('Settings: audit key protection', () => {
  it("shows the keychain's warning plainly when the keys are only obfuscated", () => {
    const html = render(status('No keyring (GNOME Keyring or KWallet) is available: Executor keys are stored with a fixed key.'));
    expect(html).toMatch(/<p class="warning" role="status">No keyring \(GNOME Keyring or KWallet\) is available/);
    expect(html).toContain('Plain text (no OS keychain: see the warning above)');
  });

  it('shows no warning under an OS keychain', () => {
    const html = render(status(null));
    expect(html).not.toContain('class="warning"');
    expect(html).toContain('OS keychain');
  });
});
