import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import type { WitnessConfig } from '../../policy/policy-file.js';
import { globals, print, untilStopped, withExecutor } from '../cli-context.js';
import { localTimeWords } from '../time-words.js';

/** The pure note code and the witness server, loaded by the command that runs, not by `--help`. */
const noteModules = async () => {
  const [note, server, state] = await Promise.all([
    import('../../audit/format/signed-note.js'),
    import('../../audit/witness/witness-server.js'),
    import('../../audit/witness/witness-state.js'),
  ]);
  return { ...note, ...server, ...state };
};

function port(value: string): number {
  const parsed = Number(value);
  if (!/^\d{1,5}$/.test(value) || parsed > 65535)
    throw new ExecutorError('INVALID_INPUT', `--port takes a whole number from 0 to 65535, not "${value}".`);
  return parsed;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** The witness's signer key: one skey line in a 0600 file. */
async function readWitnessKey(keyFile: string) {
  const { parseSignerKey, SignedNoteError } = await noteModules();
  let skey: string;
  try {
    skey = fs.readFileSync(keyFile, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ExecutorError(
        'NOT_FOUND',
        `There is no witness key at ${keyFile}. Make one with \`executor witness key --key-file ${keyFile} --name NAME\`.`,
        { keyFile },
      );
    }
    throw error;
  }
  try {
    return parseSignerKey(skey, { cosigner: true });
  } catch (error) {
    if (error instanceof SignedNoteError)
      throw new ExecutorError('INVALID_INPUT', `${keyFile} does not hold a witness key (PRIVATE+KEY+name+hash+base64): ${error.message}`, {
        keyFile,
      });
    throw error;
  }
}

/**
 * `--log ORIGIN=VKEY`, or just `--log VKEY` when the origin is the key's name (as C2SP recommends).
 * Split at an '=' only before the first '+': the vkey's base64 may end in '='.
 */
async function parseLogOption(option: string) {
  const { parseVerifierKey, NOTE_ED25519, SignedNoteError } = await noteModules();
  const equals = option.indexOf('=');
  const plus = option.indexOf('+');
  const [origin, vkey] =
    equals > 0 && (plus < 0 || equals < plus) ? [option.slice(0, equals), option.slice(equals + 1)] : [undefined, option];
  let verifier;
  try {
    verifier = parseVerifierKey(vkey);
  } catch (error) {
    if (error instanceof SignedNoteError)
      throw new ExecutorError(
        'INVALID_INPUT',
        `--log ${option}: ${error.message} Give ORIGIN=VKEY, the vkey as \`executor witness log-key\` prints it.`,
      );
    throw error;
  }
  if (verifier.type !== NOTE_ED25519)
    throw new ExecutorError(
      'INVALID_INPUT',
      `--log ${option}: a log signs its checkpoints with an Ed25519 note key (type 0x01), not a cosigner key.`,
    );
  return { origin: origin ?? verifier.name, verifier };
}

/** witness key|serve (a team's own witness) and add|add-git|list|remove|publish (this data directory's witnesses). */
export function registerWitnessCommands(program: Command): void {
  const witness = program
    .command('witness')
    .description("witnesses outside this machine that cosign the audit log's checkpoints (C2SP tlog-witness), and a witness of your own");

  witness
    .command('key')
    .description("print a witness's public key (vkey) for its key file, making the key first when the file does not exist")
    .requiredOption('--key-file <file>', 'the witness key file (created 0600 when missing)')
    .option('--name <name>', "the witness's name when making a key, e.g. witness.example.com/team (no spaces or '+')")
    .action(async (options: { keyFile: string; name?: string }, command: Command) => {
      const { json } = globals(command);
      const { generateSignerKey } = await noteModules();
      let created = false;
      if (!fs.existsSync(options.keyFile)) {
        const name = options.name ?? `${os.hostname().replace(/[^A-Za-z0-9.-]/g, '-') || 'localhost'}/executor-witness`;
        const { skey } = generateSignerKey(name, { cosigner: true });
        fs.mkdirSync(path.dirname(path.resolve(options.keyFile)), { recursive: true, mode: 0o700 });
        // wx: never overwrite a key another run made in between.
        fs.writeFileSync(options.keyFile, `${skey}\n`, { mode: 0o600, flag: 'wx' });
        created = true;
      } else if (options.name !== undefined) {
        const existing = await readWitnessKey(options.keyFile);
        if (existing.name !== options.name)
          throw new ExecutorError(
            'INVALID_INPUT',
            `${options.keyFile} already holds the key of ${existing.name}; --name only names a new key. Choose another --key-file.`,
          );
      }
      const signer = await readWitnessKey(options.keyFile);
      print(json, { name: signer.name, vkey: signer.vkey, keyFile: options.keyFile, created }, () => signer.vkey);
    });

  witness
    .command('serve')
    .description(
      'run a C2SP tlog-witness: POST /add-checkpoint cosigns checkpoints consistent with what it saw; GET /<sha256(origin)>/checkpoint serves the newest',
    )
    .requiredOption('--key-file <file>', 'the witness key (`executor witness key` makes one)')
    .requiredOption(
      '--log <origin=vkey>',
      'a log this witness follows: its origin and its checkpoint key (`executor witness log-key` prints it); repeat for more',
      collect,
    )
    .option('--port <port>', 'port to listen on (default: a free one, printed)', port, 0)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option(
      '--state-dir <dir>',
      "where the witness keeps each log's newest cosigned checkpoint (default: witness-state beside the key file)",
    )
    .action(async (options: { keyFile: string; log: string[]; port: number; host: string; stateDir?: string }, command: Command) => {
      const { json } = globals(command);
      const signer = await readWitnessKey(options.keyFile);
      const logs = await Promise.all(options.log.map(parseLogOption));
      const origins = new Set<string>();
      for (const log of logs) {
        if (origins.has(log.origin))
          throw new ExecutorError(
            'INVALID_INPUT',
            `The log ${log.origin} is named twice; give all its keys in one --log each only once per origin.`,
          );
        origins.add(log.origin);
      }
      const { startWitnessServer, WitnessStateDir } = await noteModules();
      const stateDir = path.resolve(options.stateDir ?? path.join(path.dirname(path.resolve(options.keyFile)), 'witness-state'));
      fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      // One witness per state directory: two would each check "old size" against their own reading and could cosign a rollback.
      const { acquireDataDirLock } = await import('../../store/data-dir-lock.js');
      const lock = (() => {
        try {
          return acquireDataDirLock(stateDir);
        } catch (error) {
          // The lock's own words name a data directory; here it is the witness's state folder.
          if (error instanceof ExecutorError && error.code === 'BUSY') {
            const pid = (error.details as { pid?: unknown } | undefined)?.pid;
            throw new ExecutorError(
              'BUSY',
              `busy: the witness state folder ${stateDir} is held by ${typeof pid === 'number' ? `pid ${pid}` : 'another process'} (another witness serve). One witness serves one state folder: stop that one, or give --state-dir another folder.`,
              { pid, stateDir },
            );
          }
          throw error;
        }
      })();
      const running = await startWitnessServer(
        {
          signer,
          logs: logs.map((log) => ({ origin: log.origin, verifiers: [log.verifier] })),
          state: new WitnessStateDir(stateDir),
          log: (line) => process.stderr.write(`${line}\n`),
        },
        { host: options.host, port: options.port },
      );
      // Listened for before the announcement (a SIGTERM right on it would otherwise end the process unclosed).
      const stopped = untilStopped();
      print(
        json,
        { url: running.url, name: signer.name, vkey: signer.vkey, stateDir, logs: logs.map((log) => log.origin), pid: process.pid },
        () =>
          [
            `witness ${signer.name} listening on ${running.url}`,
            `  vkey ${signer.vkey}`,
            `  state ${stateDir}`,
            ...logs.map((log) => `  follows ${log.origin}`),
          ].join('\n'),
      );
      await stopped;
      await running.close();
      lock.release();
    });

  witness
    .command('log-key')
    .description(
      "print this log's origin and checkpoint key as `ORIGIN=VKEY`, what `executor witness serve --log` (and any C2SP witness) is configured with",
    )
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const log = await readLocalLog(dataDir);
      const vkey = log.verifiers.at(-1)?.vkey;
      if (!vkey)
        throw new ExecutorError(
          'NOT_FOUND',
          'This audit log has no checkpoint key yet: run any command that records (e.g. `executor roots list`) first.',
        );
      print(json, { origin: log.origin, vkey }, () => `${log.origin}=${vkey}`);
    });

  witness
    .command('add')
    .description('add a C2SP tlog-witness by URL and its cosigner vkey; each checkpoint is sent to it from now on')
    .argument('<url>', "the witness's submission prefix, e.g. https://witness.example.com (add-checkpoint is appended)")
    .argument('<vkey>', "the witness's public key, name+hash+base64 (`executor witness key` prints one's)")
    .option('--name <name>', "what reports call it (default: the vkey's name)")
    .action(async (url: string, vkey: string, options: { name?: string }, command: Command) => {
      const { parseVerifierKey, NOTE_COSIGNATURE_V1, SignedNoteError } = await noteModules();
      let verifier;
      try {
        verifier = parseVerifierKey(vkey);
      } catch (error) {
        if (error instanceof SignedNoteError) throw new ExecutorError('INVALID_INPUT', `${vkey} is not a witness key: ${error.message}`);
        throw error;
      }
      if (verifier.type !== NOTE_COSIGNATURE_V1)
        throw new ExecutorError(
          'INVALID_INPUT',
          'A witness cosigns with a cosignature/v1 key (type 0x04); this vkey is a plain note key. Ask the witness for its cosigner vkey.',
        );
      await addWitness(command, { kind: 'http', name: options.name ?? verifier.name, url, vkey });
    });

  witness
    .command('add-git')
    .description(
      "add a team's git remote as a witness: each checkpoint note is appended to a file on the branch and pushed (protect the branch on the git host: no force-push)",
    )
    .argument('<remote>', 'a git URL or path, as `git clone` takes it; your own git credentials are used')
    .option('--branch <branch>', 'the branch that receives checkpoints', 'executor-audit')
    .option('--name <name>', 'what reports call it', 'git')
    .action(async (remote: string, options: { branch: string; name: string }, command: Command) => {
      await addWitness(command, { kind: 'git', name: options.name, remote, branch: options.branch });
    });

  witness
    .command('list')
    .description(
      'the witnesses in the policy, each with the newest checkpoint it cosigned (or was pushed) as this data directory recorded it',
    )
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const { loadPolicy } = await import('../../policy/policy-file.js');
      const witnesses = loadPolicy(dataDir).witnesses;
      const newest = await newestCosignatures(dataDir, witnesses);
      const rows = witnesses.map((witness) => ({ ...witness, newest: newest.get(witness.name) ?? null }));
      print(json, rows, () =>
        rows.length === 0
          ? 'No witnesses: add one with `executor witness add URL VKEY` or `executor witness add-git REMOTE`.'
          : rows
              .map((row) =>
                [
                  `${row.name}  ${row.kind === 'http' ? row.url : `${row.remote} (${row.branch})`}`,
                  row.newest
                    ? `  newest: ${row.newest.size} records, ${row.kind === 'http' ? 'cosigned' : 'pushed'} ${localTimeWords(new Date(row.newest.cosignedAt * 1000).toISOString())}`
                    : '  newest: none yet',
                ].join('\n'),
              )
              .join('\n'),
      );
    });

  witness
    .command('remove')
    .description(
      'remove a witness from the policy: no checkpoint goes to it from now on, but the log records the removal and `audit verify` still asks it (what it already holds stays with it)',
    )
    .argument('<name>')
    .action(async (name: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const policy = await withExecutor(dataDir, async (api) => {
        const current = await api.getPolicy();
        if (!current.witnesses.some((witness) => witness.name === name))
          throw new ExecutorError('NOT_FOUND', `There is no witness named ${name}; \`executor witness list\` shows them.`);
        return api.setPolicy({ policy: { ...current, witnesses: current.witnesses.filter((witness) => witness.name !== name) } });
      });
      print(json, policy.witnesses, () =>
        [
          `removed witness ${name}; no checkpoint goes to it from now on`,
          // A removal must not hide a rollback: the log keeps the witness's URL and key, and verify keeps asking.
          `  the log records the removal, and \`executor audit verify\` still asks it; once it is gone for good, verify with --accept-removed-witness ${name}`,
        ].join('\n'),
      );
    });

  witness
    .command('publish')
    .description(
      'seal the head with a checkpoint and send it to every witness now, waiting for their answers (a running host also does this after each checkpoint)',
    )
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const results = await withExecutor(dataDir, (api) => api.publishToWitnesses());
      print(json, results, () =>
        results.length
          ? results
              .map(
                (result) =>
                  `${result.witness}: ${result.kind.replace('_', ' ')}${result.size !== undefined ? ` (${result.size} records)` : ''}${result.message ? `: ${result.message}` : ''}`,
              )
              .join('\n')
          : 'No witnesses to publish to.',
      );
      // Exit 1 when a witness shows this log rolled back or forked; 3 when one could not be reached or refused.
      if (results.some((result) => result.kind === 'rolled_back' || result.kind === 'forked')) process.exitCode = 1;
      else if (results.some((result) => result.kind === 'unreachable' || result.kind === 'refused')) process.exitCode = 3;
    });
}

async function addWitness(command: Command, witness: WitnessConfig): Promise<void> {
  const { dataDir, json } = globals(command);
  const policy = await withExecutor(dataDir, async (api) => {
    const current = await api.getPolicy();
    if (current.witnesses.some((known) => known.name === witness.name))
      throw new ExecutorError('INVALID_INPUT', `A witness named ${witness.name} exists already; remove it first or give --name.`);
    return api.setPolicy({ policy: { ...current, witnesses: [...current.witnesses, witness] } });
  });
  print(
    json,
    policy.witnesses,
    () => `added witness ${witness.name}; each checkpoint goes to it from now on (\`executor witness publish\` sends the newest now)`,
  );
}

/** The newest cosignature (or push) per witness, read-only. */
async function newestCosignatures(dataDir: string, witnesses: readonly WitnessConfig[]) {
  const newest = new Map<string, { size: number; cosignedAt: number }>();
  if (witnesses.length === 0 || !fs.existsSync(path.join(dataDir, 'executor.db'))) return newest;
  const [{ openDatabase }, { CosignatureStore }] = await Promise.all([
    import('../../store/database.js'),
    import('../../audit/witness/cosignature-store.js'),
  ]);
  const db = openDatabase(dataDir, { readonly: true });
  try {
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'audit_cosignatures'").get();
    if (!hasTable) return newest;
    const store = new CosignatureStore(db);
    for (const witness of witnesses) {
      const row = store.newest(witness.name);
      if (row) newest.set(witness.name, { size: row.size, cosignedAt: row.cosignedAt });
    }
  } finally {
    db.close();
  }
  return newest;
}

/** The local log as the witness code reads it (read-only database). */
async function readLocalLog(dataDir: string) {
  const [{ openAuditDatabaseReadOnly }, { dbWitnessedLog }] = await Promise.all([
    import('../../audit/log/audit-reader.js'),
    import('../../audit/witness/db-witnessed-log.js'),
  ]);
  const db = openAuditDatabaseReadOnly(dataDir);
  try {
    const log = dbWitnessedLog(db);
    if (!log) throw new ExecutorError('NOT_FOUND', `The audit log in ${dataDir} holds no record yet.`);
    return { origin: log.origin, verifiers: log.verifiers };
  } finally {
    db.close();
  }
}
