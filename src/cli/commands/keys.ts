import fs from 'node:fs';
import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import { askHostIfKeysSealed, globals, print, withExecutor } from '../cli-context.js';
import { localTimeWords } from '../time-words.js';

/** Where K0 is kept once it leaves this machine: somewhere a thief of this machine cannot reach, yet the person can. */
const KEEP_K0_WORDS =
  'Keep it where someone who takes this machine cannot reach it: a password manager, an encrypted drive kept apart, or on paper in a safe; a reviewer verifies an export with it (`executor audit verify --verification-key`). Never beside the data directory.';

/** keys export-verification|rotate|status: the audit log's keys. */
export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description("the audit log's keys");

  keys
    .command('export-verification')
    .description(
      'show the verification key K0 once (keep it offline), with the public key that checks checkpoints; it is then erased here. On a terminal it asks first; elsewhere it needs --yes (or --keep)',
    )
    .option('--keep', 'do not erase K0 from this machine (weakens forward security until it is erased)')
    .option('--yes', 'erase K0 here after showing it without asking (for scripts; keep the output where the notice says)')
    .action(async (options: { keep?: boolean; yes?: boolean }, command: Command) => {
      const { dataDir, json } = globals(command);
      const interactive = !json && process.stdin.isTTY === true && process.stdout.isTTY === true;
      const lines = await withExecutor(dataDir, async (api) => {
        // Only a K0 still stored here is erased: with none left the export says so itself (KEY_ALREADY_EXPORTED).
        const erases = !options.keep && (await api.getKeyStatus()).chains.some((chain) => !chain.verificationKeyExported);
        if (erases && !options.yes) {
          if (!interactive)
            throw new ExecutorError(
              'INVALID_INPUT',
              `keys export-verification prints K0 once and then erases it from this machine, and there is no terminal to ask you here. ${KEEP_K0_WORDS} Run it again with --yes to go ahead, or with --keep to leave K0 here as well.`,
            );
          process.stdout.write(
            `This prints the verification key K0 once and then ERASES it from this machine: after this, only the copy you keep can verify the log on its own.\n${KEEP_K0_WORDS}\n`,
          );
          const { askYes } = await import('../terminal-question.js');
          if (!(await askYes('Show K0 and erase it here? [y/N] '))) return null;
        }
        return api.exportVerificationKeys({ keep: options.keep });
      });
      if (!lines) {
        process.stdout.write('Nothing was shown or erased; K0 is still stored here. `--keep` shows it without erasing it.\n');
        process.exitCode = 1;
        return;
      }
      print(json, lines, () =>
        [
          ...lines.flatMap((line) => [
            `key ${line.keyId}`,
            `  verification key (secret, keep offline): ${line.verificationKey}`,
            `  checkpoint public key:                   ${line.publicKey}`,
          ]),
          options.keep
            ? 'K0 is still stored on this machine.'
            : `K0 is now erased from this machine: this is the only time it is shown. ${KEEP_K0_WORDS}`,
        ].join('\n'),
      );
    });

  keys
    .command('rotate')
    .description('start a new key chain; the rotation is recorded under both keys and sealed by a checkpoint')
    .option('--reason <text>', 'why (recorded)')
    .action(async (options: { reason?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const rotated = await withExecutor(dataDir, (api) => api.rotateKeys({ reason: options.reason }));
      print(
        json,
        rotated,
        () => `rotated: key ${rotated.previousKeyId} → ${rotated.keyId}. Run \`executor keys export-verification\` to keep the new K0.`,
      );
    });

  keys
    .command('status')
    .description('which key signs now, how the keys are protected, which verification keys were exported')
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      if (!fs.existsSync(dataDir)) throw new ExecutorError('NOT_FOUND', `There is no data directory at ${dataDir}.`, { dataDir });
      // Sealed keys are read by the app that sealed them; plain ones are read here, without the host's lock.
      const status = (await askHostIfKeysSealed(dataDir, (api) => api.getKeyStatus()))?.value ?? (await readKeyStatus(dataDir));
      print(json, status, () =>
        [
          `log        ${status.logId}`,
          `protection ${status.protection === 'plaintext' ? (status.protectionWarning ? 'plaintext (no OS keychain)' : 'plaintext: keys are files readable by your user only (no OS keychain)') : 'OS keychain'}`,
          ...(status.protectionWarning ? [`warning    ${status.protectionWarning}`] : []),
          `keys in    ${status.location}`,
          `signing    key ${status.currentKeyId}, epoch ${status.epoch}`,
          ...status.chains.map(
            (chain) =>
              `chain      ${chain.keyId} since ${localTimeWords(chain.createdAt)}: K0 ${chain.verificationKeyExported ? `exported${chain.exportedAt ? ` ${localTimeWords(chain.exportedAt)}` : ''}` : 'NOT yet exported (run `executor keys export-verification`)'}`,
          ),
          `anchor     ${status.anchor ? `seq ${status.anchor.seq} at ${localTimeWords(status.anchor.ts)}` : 'none yet'}`,
        ].join('\n'),
      );
    });
}

/** The key status from plain key files, read directly (no host needed). */
async function readKeyStatus(dataDir: string) {
  const [{ AuditReader }, { FileKeyStore }] = await Promise.all([
    import('../../audit/log/audit-reader.js'),
    import('../../audit/keys/key-store.js'),
  ]);
  const reader = new AuditReader(dataDir, new FileKeyStore(dataDir));
  try {
    const keyring = reader.keyring();
    if (!keyring) throw new ExecutorError('AUDIT_KEY_MISSING', `No audit keys in ${reader.keyStore.location}.`);
    const anchor = reader.anchor();
    return {
      logId: keyring.logId,
      protection: keyring.protection,
      protectionWarning: null as string | null,
      location: keyring.location,
      currentKeyId: keyring.current().keyId,
      epoch: keyring.current().epoch,
      chains: keyring.chains().map((chain) => ({
        keyId: chain.keyId,
        createdAt: chain.createdAt,
        verificationKeyExported: !chain.rootKey,
        exportedAt: chain.exportedAt ?? null,
      })),
      anchor: anchor ? { seq: anchor.seq, ts: anchor.ts } : null,
    };
  } finally {
    reader.close();
  }
}
