import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import { globals, print } from '../cli-context.js';

/** The pure note code and the witness server, loaded by the command that runs, not by `--help`. */
const noteModules = async () => {
  const [note, server, state] = await Promise.all([
    import('../../audit/signed-note.js'),
    import('../../audit/witness/witness-server.js'),
    import('../../audit/witness/witness-state.js'),
  ]);
  return { ...note, ...server, ...state };
};

function port(value: string): number {
  const parsed = Number(value);
  if (!/^\d{1,5}$/.test(value) || parsed > 65535) throw new ExecutorError('INVALID_INPUT', `--port takes a whole number from 0 to 65535, not "${value}".`);
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
      throw new ExecutorError('NOT_FOUND', `There is no witness key at ${keyFile}. Make one with \`executor witness key --key-file ${keyFile} --name NAME\`.`, { keyFile });
    }
    throw error;
  }
  try {
    return parseSignerKey(skey, { cosigner: true });
  } catch (error) {
    if (error instanceof SignedNoteError) throw new ExecutorError('INVALID_INPUT', `${keyFile} does not hold a witness key (PRIVATE+KEY+name+hash+base64): ${error.message}`, { keyFile });
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
  const [origin, vkey] = equals > 0 && (plus < 0 || equals < plus) ? [option.slice(0, equals), option.slice(equals + 1)] : [undefined, option];
  let verifier;
  try {
    verifier = parseVerifierKey(vkey);
  } catch (error) {
    if (error instanceof SignedNoteError) throw new ExecutorError('INVALID_INPUT', `--log ${option}: ${error.message} Give ORIGIN=VKEY, the vkey as \`executor witness log-key\` prints it.`);
    throw error;
  }
  if (verifier.type !== NOTE_ED25519) throw new ExecutorError('INVALID_INPUT', `--log ${option}: a log signs its checkpoints with an Ed25519 note key (type 0x01), not a cosigner key.`);
  return { origin: origin ?? verifier.name, verifier };
}

/** witness key|serve (a team's own witness) and add|add-git|list|remove|publish (this data directory's witnesses). */
export function registerWitnessCommands(program: Command): void {
  const witness = program.command('witness').description('witnesses outside this machine that cosign the audit log\'s checkpoints (C2SP tlog-witness), and a witness of your own');

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
        if (existing.name !== options.name) throw new ExecutorError('INVALID_INPUT', `${options.keyFile} already holds the key of ${existing.name}; --name only names a new key. Choose another --key-file.`);
      }
      const signer = await readWitnessKey(options.keyFile);
      print(json, { name: signer.name, vkey: signer.vkey, keyFile: options.keyFile, created }, () => signer.vkey);
    });

  witness
    .command('serve')
    .description('run a C2SP tlog-witness: POST /add-checkpoint cosigns checkpoints consistent with what it saw; GET /<sha256(origin)>/checkpoint serves the newest')
    .requiredOption('--key-file <file>', 'the witness key (`executor witness key` makes one)')
    .requiredOption('--log <origin=vkey>', "a log this witness follows: its origin and its checkpoint key (`executor witness log-key` prints it); repeat for more", collect)
    .option('--port <port>', 'port to listen on (default: a free one, printed)', port, 0)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--state-dir <dir>', "where the witness keeps each log's newest cosigned checkpoint (default: witness-state beside the key file)")
    .action(async (options: { keyFile: string; log: string[]; port: number; host: string; stateDir?: string }, command: Command) => {
      const { json } = globals(command);
      const signer = await readWitnessKey(options.keyFile);
      const logs = await Promise.all(options.log.map(parseLogOption));
      const origins = new Set<string>();
      for (const log of logs) {
        if (origins.has(log.origin)) throw new ExecutorError('INVALID_INPUT', `The log ${log.origin} is named twice; give all its keys in one --log each only once per origin.`);
        origins.add(log.origin);
      }
      const { startWitnessServer, WitnessStateDir } = await noteModules();
      const stateDir = path.resolve(options.stateDir ?? path.join(path.dirname(path.resolve(options.keyFile)), 'witness-state'));
      fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      // One witness per state directory: two would each check "old size" against their own reading and could cosign a rollback.
      const { acquireDataDirLock } = await import('../../store/data-dir-lock.js');
      const lock = acquireDataDirLock(stateDir);
      const running = await startWitnessServer(
        { signer, logs: logs.map((log) => ({ origin: log.origin, verifiers: [log.verifier] })), state: new WitnessStateDir(stateDir), log: (line) => process.stderr.write(`${line}\n`) },
        { host: options.host, port: options.port },
      );
      print(json, { url: running.url, name: signer.name, vkey: signer.vkey, stateDir, logs: logs.map((log) => log.origin), pid: process.pid }, () =>
        [`witness ${signer.name} listening on ${running.url}`, `  vkey ${signer.vkey}`, `  state ${stateDir}`, ...logs.map((log) => `  follows ${log.origin}`)].join('\n'),
      );
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve();
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      await running.close();
      lock.release();
    });
}
