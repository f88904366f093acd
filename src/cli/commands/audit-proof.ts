import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import { globals, print } from '../cli-context.js';
import { localTimeWords } from '../time-words.js';

/** Exit status of `audit verify-proof` when the proof does not hold (2 stays "the command itself failed"). */
const EXIT_PROOF_FAILED = 1;

// Each command loads only what it needs, so both start about as fast as `--help`: checking a proof
// reads no database and no key store; writing one opens the database read-only.
const proveModules = async () => {
  const [proof, reading, writing] = await Promise.all([
    import('../../audit/export/record-proof.js'),
    import('../../store/database.js'),
    import('../../fs/atomic-write.js'),
  ]);
  return { ...proof, ...reading, ...writing };
};

function wholeNumber(name: string, value: string): number {
  if (!/^[1-9]\d{0,14}$/.test(value))
    throw new ExecutorError('INVALID_INPUT', `${name} takes a record seq, a whole number from 1; not "${value}".`);
  return Number(value);
}

/** audit prove|verify-proof: one record, handed to a third party with what proves it was logged. */
/** The largest proof file verify-proof reads (documented in docs/AUDIT.md): beyond it the proof is MALFORMED. */
export const MAX_PROOF_BYTES = 1024 * 1024;

function tooLarge<T extends { problem: { code: string; message: string } | null }>(report: T): T {
  return {
    ...report,
    problem: {
      code: 'MALFORMED',
      message: `the file is larger than ${MAX_PROOF_BYTES} bytes (1 MiB), far more than any proof; it was not read`,
    },
  };
}

export function registerAuditProofCommands(audit: Command): void {
  audit
    .command('prove')
    .description(
      'write one record with its Merkle inclusion proof and the signed (and cosigned) checkpoint that covers it, for a third party to check offline',
    )
    .argument('<seq>', 'the record to prove')
    .option('--out <file>', 'write the proof here (default: standard output)')
    .action(async (seqText: string, options: { out?: string }, command: Command) => {
      const { dataDir } = globals(command);
      const seq = wholeNumber('audit prove', seqText);
      if (!fs.existsSync(dataDir)) throw new ExecutorError('NOT_FOUND', `There is no data directory at ${dataDir}.`, { dataDir });
      const { buildRecordProof, DATABASE_FILE, openDatabase, writeFileAtomic } = await proveModules();
      if (!fs.existsSync(path.join(dataDir, DATABASE_FILE)))
        throw new ExecutorError('NOT_FOUND', `There is no Executor database in ${dataDir}: nothing has been recorded there yet.`, {
          dataDir,
        });
      if (options.out) (await import('../../fs/output-file.js')).refuseInsideDataDir(path.resolve(options.out), dataDir);
      const db = openDatabase(dataDir, { readonly: true });
      let proof;
      try {
        // One read transaction: the record, the note and the tree rows all from the same moment, while the host appends.
        proof = db.transaction(() => buildRecordProof(db, seq))();
      } finally {
        db.close();
      }
      const text = `${JSON.stringify(proof, null, 2)}\n`;
      if (!options.out) {
        process.stdout.write(text);
        return;
      }
      // The record may name the person's files: private until they choose to hand it on.
      const target = path.resolve(options.out);
      try {
        writeFileAtomic(target, Buffer.from(text, 'utf8'), 0o600);
      } catch (error) {
        const { outputFileFailure } = await import('../../fs/output-file.js');
        throw outputFileFailure(error, target, Buffer.byteLength(text));
      }
      process.stderr.write(
        `wrote the proof of record ${seq} (tree of ${proof.inclusion.treeSize} records, checkpoint ${proof.checkpoint.cpSeq}) to ${options.out}\n`,
      );
    });

  audit
    .command('verify-proof')
    .description(
      'check a record proof offline with public keys only: the log key (epk2-… or its vkey) and any witness vkeys (exit 1 names what does not hold)',
    )
    .argument('[file]', 'the proof file `executor audit prove` wrote')
    .option(
      '--key <keys>',
      "keys you trust, separated by commas: the log's epk2-… public key (or its executor.audit/… vkey) and witness vkeys",
    )
    .action(async (file: string | undefined, options: { key?: string }, command: Command) => {
      const { json } = globals(command);
      if (!file)
        throw new ExecutorError('INVALID_INPUT', 'verify-proof needs the proof file: executor audit verify-proof FILE --key epk2-…');
      if (!options.key)
        throw new ExecutorError(
          'INVALID_INPUT',
          "verify-proof needs --key: the log's public key epk2-… as `executor keys export-verification` showed it, or its vkey; add witness vkeys to check their cosignatures.",
        );
      const { checkRecordProof, parseProofKeys } = await import('../../audit/export/record-proof-check.js');
      const keys = parseProofKeys(options.key);
      let text: string | null = null;
      try {
        // A proof is a few kilobytes (one record, at most 64 hashes, one note): a bigger file is refused unread.
        if (fs.statSync(file).size <= MAX_PROOF_BYTES) text = fs.readFileSync(file, 'utf8');
      } catch (error) {
        throw new ExecutorError('NOT_FOUND', `Cannot read the proof file ${file}: ${(error as Error).message}.`, { file });
      }
      let input: unknown;
      try {
        input = text === null ? undefined : JSON.parse(text);
      } catch {
        input = undefined;
      }
      const report = text === null ? tooLarge(checkRecordProof(undefined, keys)) : checkRecordProof(input, keys);
      print(json, report, () => {
        if (!report.ok) return `proof does NOT hold: ${report.problem!.code}: ${report.problem!.message}`;
        return [
          `proof holds: record ${report.seq} (${report.action ?? '?'} at ${report.ts ? localTimeWords(report.ts) : '?'}) of log ${report.logId}, in checkpoint ${report.checkpoint?.cpSeq} of ${report.treeSize} records`,
          `  signed by: ${report.signedBy.join(', ')}`,
          ...(report.uncheckedSignatures.length ? [`  not checked (no key given): ${report.uncheckedSignatures.join(', ')}`] : []),
          '  it proves:',
          ...report.proves.map((line) => `    - ${line}`),
          '  it does not prove:',
          ...report.doesNotProve.map((line) => `    - ${line}`),
        ].join('\n');
      });
      process.exitCode = report.ok ? 0 : EXIT_PROOF_FAILED;
    });
}
