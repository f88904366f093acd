import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { startInTerminal } from '../../helpers/terminal-process.js';

/*
 * `keys export-verification` erases K0 from this machine after printing it. That is asked first on a
 * terminal, needs --yes elsewhere, and says where else the key can be kept. Real CLI; the terminal is
 * a real pseudo-terminal (util-linux `script`).
 */

function exported(dataDir: string): boolean[] {
  return runCli(['--data-dir', dataDir, '--json', 'keys', 'status'])
    .json<{ chains: { verificationKeyExported: boolean }[] }>()
    .chains.map((chain) => chain.verificationKeyExported);
}

function freshDataDir(): string {
  const { dataDir } = tempSetup();
  // Opening it once makes the keys.
  expect(runCli(['--data-dir', dataDir, 'steps', 'list']).status).toBe(0);
  expect(exported(dataDir)).toEqual([false]);
  return dataDir;
}

describe('keys export-verification asks before it erases K0', () => {
  it('without a terminal it refuses without --yes, erases nothing, and says where to keep K0; --keep and --yes go ahead', () => {
    const dataDir = freshDataDir();
    for (const args of [
      ['keys', 'export-verification'],
      ['--json', 'keys', 'export-verification'],
    ]) {
      const refused = runCli(['--data-dir', dataDir, ...args]);
      expect(refused.status).toBe(2);
      // Human output says it on stderr; --json as its error object on stdout.
      const said = refused.stderr + refused.stdout;
      expect(said).toContain('INVALID_INPUT');
      expect(said).toContain('--yes');
      expect(said).toContain('password manager');
      expect(said).not.toMatch(/evk1-|epk2-/);
    }
    expect(exported(dataDir)).toEqual([false]);

    const kept = runCli(['--data-dir', dataDir, 'keys', 'export-verification', '--keep']);
    expect(kept.status, kept.stderr).toBe(0);
    expect(kept.stdout).toContain('K0 is still stored on this machine.');
    expect(exported(dataDir)).toEqual([false]);

    const erased = runCli(['--data-dir', dataDir, 'keys', 'export-verification', '--yes']);
    expect(erased.status, erased.stderr).toBe(0);
    expect(erased.stdout).toMatch(/verification key \(secret, keep offline\): (evk1|epk2)-/);
    expect(erased.stdout).toContain('password manager');
    expect(exported(dataDir)).toEqual([true]);
    // Nothing left to erase: the export itself says so, with or without --yes.
    const again = runCli(['--data-dir', dataDir, 'keys', 'export-verification']);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('KEY_ALREADY_EXPORTED');
  });

  it('on a terminal it asks first: no shows and erases nothing, yes prints K0 and erases it', async () => {
    const dataDir = freshDataDir();
    const declined = startInTerminal(['--data-dir', dataDir, 'keys', 'export-verification']);
    await expect.poll(() => declined.output(), { timeout: 30_000 }).toContain('Show K0 and erase it here? [y/N]');
    expect(declined.output()).toContain('ERASES it from this machine');
    expect(declined.output()).toContain('password manager');
    declined.type('n\r');
    expect(await declined.exited).toBe(1);
    expect(declined.output()).toContain('Nothing was shown or erased');
    expect(declined.output()).not.toMatch(/evk1-|epk2-/);
    expect(exported(dataDir)).toEqual([false]);

    const accepted = startInTerminal(['--data-dir', dataDir, 'keys', 'export-verification']);
    await expect.poll(() => accepted.output(), { timeout: 30_000 }).toContain('[y/N]');
    accepted.type('y\r');
    expect(await accepted.exited).toBe(0);
    expect(accepted.output()).toMatch(/verification key \(secret, keep offline\): (evk1|epk2)-/);
    expect(accepted.output()).toContain('K0 is now erased from this machine');
    expect(exported(dataDir)).toEqual([true]);
  });
});
