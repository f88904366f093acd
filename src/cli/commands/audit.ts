import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { visibleLine } from '../../domain/visible-text.js';
import { auditRecordSentence } from '../../domain/audit-sentence.js';
import { summarizeStep } from '../../domain/step-title.js';
import type { Step } from '../../domain/step.js';
import type { AuditEntry } from '../../audit/log/audit-query.js';
import type { AuditReader } from '../../audit/log/audit-reader.js';
import { FileKeyStore, sealedKeysPresent, type KeyStore } from '../../audit/keys/key-store.js';
import type { VerifyProgress, VerifyReport } from '../../audit/verify/verify-codes.js';
import type { WitnessReport } from '../../audit/witness/witness-check.js';
import type { WitnessConfig } from '../../policy/policy-file.js';
import { ExecutorError } from '../../domain/errors.js';
import type { ExecutorClient } from '../../ipc/client/client.js';
import { askHostIfKeysSealed, globals, print } from '../cli-context.js';
import { registerAuditProofCommands } from './audit-proof.js';
import { localTimeWords } from '../time-words.js';

/** Exit status of `audit verify` when the log is damaged (2 stays "the command itself failed"). */
export const EXIT_NOT_INTACT = 1;
/** Exit status when the log checks out locally but a witness could not be asked or holds nothing of it: not "intact" by silence. */
export const EXIT_WITNESS_UNANSWERED = 3;

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function integer(name: string) {
  return (value: string) => {
    if (!/^\d{1,15}$/.test(value)) throw new ExecutorError('INVALID_INPUT', `${name} takes a whole number, not "${value}".`);
    return Number(value);
  };
}

/** The log's reading, export and verify code (SQLite, the record format), loaded by the command that runs, not by `--help`. */
const auditModules = async () => {
  const [exporting, keys, log, query, reading, verifier, verify] = await Promise.all([
    import('../../audit/export/audit-export.js'),
    import('../../audit/keys/audit-keys.js'),
    import('../../audit/log/audit-log.js'),
    import('../../audit/log/audit-query.js'),
    import('../../audit/log/audit-reader.js'),
    import('../../audit/verify/audit-verifier.js'),
    import('../../audit/verify/verify-audit.js'),
  ]);
  return { ...exporting, ...keys, ...log, ...query, ...reading, ...verifier, ...verify };
};

async function withReader<T>(dataDir: string, work: (reader: AuditReader) => T): Promise<T> {
  if (!fs.existsSync(dataDir)) throw new ExecutorError('NOT_FOUND', `There is no data directory at ${dataDir}.`, { dataDir });
  const { AuditReader } = await import('../../audit/log/audit-reader.js');
  const reader = new AuditReader(dataDir, new FileKeyStore(dataDir));
  try {
    return work(reader);
  } finally {
    reader.close();
  }
}

/** A key store with nothing in it: verification from the K0s given on the command line alone. */
const NO_STORED_KEYS = (dataDir: string): KeyStore => ({
  protection: 'os-keychain',
  location: path.join(dataDir, 'keys'),
  read: () => undefined,
  write: () => {
    throw new ExecutorError('AUDIT_KEY_UNAVAILABLE', 'verify never writes keys');
  },
  erase: () => undefined,
});

/** verifyAudit on the host, its progress events fed to the same printer as a local run. */
async function verifyThroughHost(api: ExecutorClient, onProgress?: (progress: VerifyProgress) => void) {
  const progressId = `cli-${process.pid}`;
  const unsubscribe = onProgress
    ? await api.on('verify', (event) => event.progressId === progressId && onProgress({ checked: event.checked, total: event.total }))
    : undefined;
  try {
    return await api.verifyAudit(onProgress ? { progressId } : undefined);
  } finally {
    unsubscribe?.();
  }
}

/** hashAuditValue on the host (the keys sealed by the app), its progress events fed to the same printer as a local search. */
async function hashThroughHost(api: ExecutorClient, value: string, onProgress?: (progress: VerifyProgress) => void) {
  const progressId = `cli-hash-${process.pid}`;
  const unsubscribe = onProgress
    ? await api.on('verify', (event) => event.progressId === progressId && onProgress({ checked: event.checked, total: event.total }))
    : undefined;
  try {
    return await api.hashAuditValue(onProgress ? { value, progressId } : { value });
  } finally {
    unsubscribe?.();
  }
}

/** At most this often a progress line goes to a log file or pipe (--progress without a terminal). */
const PIPED_PROGRESS_EVERY_MS = 500;

/**
 * Counts on stderr while verify runs: on a terminal one line rewritten in place, with --progress
 * elsewhere (a pipe, a CI log) one line at a time and at most every half second. stdout stays the report.
 */
function progressPrinter(mode: { terminal: boolean; forced: boolean; verb?: string }): {
  onProgress?: (progress: VerifyProgress) => void;
  finish(): void;
} {
  if (!mode.terminal && !mode.forced) return { finish: () => undefined };
  let lastLine = '';
  let lastAt = 0;
  const onProgress = ({ checked, total }: VerifyProgress) => {
    const percent = total ? Math.floor((checked / total) * 100) : 100;
    const line = `${mode.verb ?? 'verifying'}… checked ${checked.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} records (${percent}%)`;
    if (mode.terminal) {
      if (line !== lastLine) process.stderr.write(`\r${line}`);
    } else {
      const now = Date.now();
      if (line === lastLine || (checked < total && now - lastAt < PIPED_PROGRESS_EVERY_MS)) return;
      lastAt = now;
      process.stderr.write(`${line}\n`);
    }
    lastLine = line;
  };
  return { onProgress, finish: () => void (mode.terminal && lastLine && process.stderr.write('\n')) };
}

/**
 * A record as two lines: when, and what happened in the window's words (src/domain/audit-sentence.ts); then,
 * indented, the columns a script or a `--action` filter works with.
 */
function entryLines(entry: AuditEntry, titles: ReadonlyMap<string, string>): string {
  // The client name is what an agent said about itself: one line, escaped, like every field here.
  const who = `${visibleLine(entry.userId.user)}/${visibleLine(entry.userId.channel)}${entry.userId.client ? `(${visibleLine(entry.userId.client)})` : ''}${entry.userId.agent ? `[${visibleLine(entry.userId.agent)}]` : ''}`;
  const sentence = auditRecordSentence(
    { ...entry, args: (entry.args ?? null) as Record<string, unknown> | null },
    entry.stepId ? (titles.get(entry.stepId) ?? null) : null,
  );
  return `${String(entry.seq).padStart(7)} ${localTimeWords(entry.ts)}  ${visibleLine(sentence)}\n        ${visibleLine(entry.action).padEnd(24)} ${visibleLine(entry.stepId ?? '-').padEnd(16)} ${who}`;
}

/** The titles History gives the steps these records name, read from the same database (a step it no longer holds keeps its id). */
function stepTitles(db: { prepare(sql: string): { get(...params: unknown[]): unknown } }, entries: AuditEntry[]): Map<string, string> {
  const titles = new Map<string, string>();
  const read = db.prepare('SELECT step_json AS json FROM steps WHERE step_id = ?');
  for (const stepId of new Set(entries.map((entry) => entry.stepId).filter((id): id is string => id !== null))) {
    try {
      const row = read.get(stepId) as { json: string } | undefined;
      if (row) titles.set(stepId, summarizeStep(JSON.parse(row.json) as Step));
    } catch {
      // An older database or a step it cannot read: the sentence names the step by its id.
    }
  }
  return titles;
}

/** What the auditor adds to verify's witnesses, and the removed witnesses they accept not hearing from. */
interface WitnessOptions {
  offline: boolean;
  auditor: WitnessConfig[];
  acceptRemoved: string[];
}

/**
 * The witnesses verify asks and how this log stands against each (undefined when there is none): those in
 * the policy, every one the log's own signed records ever named (a removed one too), and the auditor's.
 */
async function askWitnesses(dataDir: string, options: WitnessOptions): Promise<{ reports: WitnessReport[] } | undefined> {
  const { loadPolicy } = await import('../../policy/policy-file.js');
  const [{ openAuditDatabaseReadOnly }, { dbWitnessedLog }, { checkWitnesses }, { witnessesNamedByLog }, { witnessesToAsk }] =
    await Promise.all([
      import('../../audit/log/audit-reader.js'),
      import('../../audit/witness/db-witnessed-log.js'),
      import('../../audit/witness/witness-check.js'),
      import('../../audit/witness/named-witnesses.js'),
      import('../../audit/witness/witnesses-to-ask.js'),
    ]);
  let current: WitnessConfig[] = [];
  let policyUnreadable: WitnessReport | undefined;
  try {
    current = loadPolicy(dataDir).witnesses;
  } catch (error) {
    // A broken policy.json must not stop a reviewer verifying the log; it does stop it being called witnessed.
    const message = `the policy could not be read, so its witnesses were not asked (those the log names were): ${(error as Error).message}`;
    policyUnreadable = {
      witness: 'policy',
      kind: 'http',
      where: 'policy.json',
      status: 'unreachable',
      newest: null,
      localSize: 0,
      message,
    };
  }
  const db = openAuditDatabaseReadOnly(dataDir);
  const tempClones: string[] = [];
  try {
    const asked = witnessesToAsk(current, witnessesNamedByLog(db), options.auditor).map((witness) => {
      if (witness.source !== 'auditor' || witness.config.kind !== 'git') return witness;
      // The auditor's remote is fetched into a folder of its own, not into the data directory, and removed after.
      const cloneDir = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-audit-git-'));
      tempClones.push(cloneDir);
      return { ...witness, cloneDir };
    });
    const removed = new Set(asked.filter((witness) => witness.source === 'log').map((witness) => witness.config.name));
    const unknown = options.acceptRemoved.filter((name) => !removed.has(name));
    if (unknown.length) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `--accept-removed-witness ${unknown.join(', ')}: ${removed.size ? `the removed witnesses this log names are ${[...removed].join(', ')}` : 'this log names no removed witness'}.`,
      );
    }
    if (asked.length === 0) return policyUnreadable ? { reports: [policyUnreadable] } : undefined;
    const log = dbWitnessedLog(db, { rootsFromRecords: true });
    const notAsked = (message: string) =>
      asked.map(({ config: witness, source, removed: removal }): WitnessReport => ({
        witness: witness.name,
        kind: witness.kind,
        source,
        ...(removal !== undefined ? { removed: removal } : {}),
        where: witness.kind === 'http' ? witness.url : `${witness.remote} (${witness.branch})`,
        status: 'unreachable',
        newest: null,
        localSize: 0,
        message,
      }));
    const reports = options.offline
      ? notAsked('not asked (--offline)')
      : !log
        ? notAsked('not asked: this log holds no record')
        : await checkWitnesses(dataDir, asked, log);
    for (const report of reports) if (report.source === 'log' && options.acceptRemoved.includes(report.witness)) report.accepted = true;
    return { reports: policyUnreadable ? [policyUnreadable, ...reports] : reports };
  } finally {
    db.close();
    for (const dir of tempClones) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * An export checked against the witnesses the auditor names (--witness, --git-witness): undefined when none
 * is named. Nothing is sent to them: a tlog-witness's newest cosigned checkpoint and a git branch's whole
 * history are read and compared with the roots the file gives (export-witness-check.ts).
 */
async function askWitnessesAboutExport(
  file: string,
  auditor: WitnessConfig[],
  options: { offline: boolean; logKeys: Buffer[] },
): Promise<{ reports: WitnessReport[] } | undefined> {
  if (auditor.length === 0) return undefined;
  const [{ witnessesToAsk }, { checkWitnessesAgainstExport, readExportedLog }] = await Promise.all([
    import('../../audit/witness/witnesses-to-ask.js'),
    import('../../audit/witness/export-witness-check.js'),
  ]);
  const asked = witnessesToAsk([], [], auditor);
  if (options.offline)
    return {
      reports: asked.map(({ config: witness, source }) => ({
        witness: witness.name,
        kind: witness.kind,
        source,
        where: witness.kind === 'http' ? witness.url : `${witness.remote} (${witness.branch})`,
        status: 'unreachable' as const,
        newest: null,
        localSize: 0,
        message: 'not asked (--offline)',
      })),
    };
  const tempClones: string[] = [];
  try {
    const withClones = asked.map((witness) => {
      if (witness.config.kind !== 'git') return witness;
      const cloneDir = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-audit-git-'));
      tempClones.push(cloneDir);
      return { ...witness, cloneDir };
    });
    return { reports: await checkWitnessesAgainstExport(withClones, readExportedLog(file, options.logKeys)) };
  } finally {
    for (const dir of tempClones) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The witnesses an export's own policy records name, as the options that would ask them (empty when none). */
async function exportNamedWitnesses(file: string): Promise<string> {
  const { witnessesInPolicyBodies } = await import('../../audit/witness/named-witnesses.js');
  let named: WitnessConfig[] = [];
  try {
    const text = fs.readFileSync(file, 'utf8');
    named = witnessesInPolicyBodies(
      text
        .split('\n')
        .filter((line) => line.includes('policy.'))
        .flatMap((line) => {
          try {
            const value = JSON.parse(line) as { type?: unknown; body?: unknown };
            return value.type === 'record' && typeof value.body === 'string' ? [value.body] : [];
          } catch {
            return [];
          }
        }),
    );
  } catch {
    return '';
  }
  if (named.length === 0) return '';
  const options = named.map((witness) =>
    witness.kind === 'http' ? `--witness ${witness.url}=${witness.vkey}` : `--git-witness ${witness.remote}#${witness.branch}`,
  );
  return `; this export's own policy records name ${options.map(visibleLine).join(', ')}`;
}

/**
 * A witness that shows the log rolled back or forked is the report's headline, whatever the local checks
 * found: an ANCHOR_MISSING or a bad record is what a rollback looks like from inside, the witness says what happened.
 */
function applyWitnessReports(report: VerifyReport, reports: WitnessReport[]): void {
  const against = reports.find((witness) => witness.status === 'rolled_back') ?? reports.find((witness) => witness.status === 'forked');
  if (!against) return;
  const local = report.problem;
  report.ok = false;
  report.problem = {
    code: against.status === 'rolled_back' ? 'ROLLED_BACK' : 'FORKED',
    // A fork is named at the size of the note that contradicts the log (git: the first such note), else the witness's newest.
    seq: against.status === 'rolled_back' ? against.localSize + 1 : (against.contradicts?.size ?? against.newest?.size ?? 0),
    message: `witness ${against.message}${against.source === 'log' ? ` (${removalWords(against)})` : ''}`,
  };
  if (local) report.warnings.unshift(`the local checks also found ${local.code} at seq ${local.seq}: ${local.message}`);
}

/** When and by whom a witness the log still names left the policy. */
function removalWords(witness: WitnessReport): string {
  if (!witness.removed)
    return 'it is not in policy.json, yet no record removed it: policy.json was edited outside Executor after the last open';
  return `removed from the policy at record ${witness.removed.seq} (${localTimeWords(witness.removed.ts)}, by ${witness.removed.by}${witness.removed.action === 'policy.edited_outside' ? ', an edit of policy.json outside Executor' : ''})`;
}

function unanswered(witness: WitnessReport): boolean {
  return (
    (witness.status === 'unreachable' || witness.status === 'no_checkpoint' || witness.status === 'not_comparable') &&
    witness.accepted !== true
  );
}

function witnessLines(reports: WitnessReport[], offline: boolean): string[] {
  if (offline)
    return [
      `witnesses: not asked (--offline); ${reports.length} known (in the policy, named by the log or given), so this is not a full verification`,
    ];
  return reports.map((witness) => {
    const line = `witness ${visibleLine(witness.witness)} (${visibleLine(witness.where)}): ${witness.status.toUpperCase().replace('_', ' ')}: ${visibleLine(witness.message)}`;
    if (witness.source === 'auditor') return `${line} [named on the command line]`;
    if (witness.source !== 'log') return line;
    const removal = visibleLine(removalWords(witness));
    if (witness.accepted) return `${line}; ${removal}; accepted as gone (--accept-removed-witness)`;
    if (unanswered(witness)) {
      return `${line}; ${removal}. Verify still asks it, since removing a witness must not hide a rollback; if you know it is gone for good, run again with --accept-removed-witness ${visibleLine(witness.witness)}`;
    }
    return `${line}; ${removal}; asked all the same`;
  });
}

/** audit verify|export|show|hash: the reviewer's view of the trail. None of them takes the host's lock or writes. */
export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('verify, export and read the signed audit log');

  audit
    .command('verify')
    .description(
      'check the whole log: canonical bodies, MACs, chain, keys and epochs, checkpoints, anchor (exit 1 names the first bad seq)',
    )
    .option(
      '--file <export.jsonl>',
      'verify an export offline instead of the database (needs --verification-key or --public-key; --witness/--git-witness check it against those witnesses)',
    )
    .option('--verification-key <keys>', 'K0 as `executor keys export-verification` showed it (evk1-…; several separated by commas)')
    .option(
      '--public-key <keys>',
      'the chain public keys as `keys export-verification` showed them (epk2-…; several separated by commas): with --file and no K0, check the chain, the epoch certificates and every signature; on the database, trust these over the key store',
    )
    .option(
      '--accept-missing-anchor',
      'you know the anchor (audit-anchor.json and its key-store copy) was lost: report its absence loudly instead of failing with ANCHOR_MISSING',
    )
    .option('--workers <n>', 'worker threads (default: one per core)', integer('--workers'))
    .option(
      '--progress',
      'print "checked N of M records" on stderr as it goes, also when stderr is not a terminal (on a terminal it does by default)',
    )
    .option('--offline', 'do not ask any witness (the report says they were not asked)')
    .option(
      '--witness <url=vkey>',
      "also ask this tlog-witness, by URL and cosigner vkey (repeatable): an auditor's own witness, trusted over the data directory's policy; with --file, the export is checked against it",
      collect,
    )
    .option(
      '--git-witness <remote[#branch]>',
      "also read this git remote's branch of checkpoints, its whole history (default branch executor-audit; repeatable); with --file, the export is checked against it",
      collect,
    )
    .option(
      '--accept-removed-witness <name>',
      'a witness removed from the policy that you know is gone for good: its silence no longer makes the check incomplete (repeatable; its verdict still counts when it answers)',
      collect,
    )
    .addHelpText(
      'after',
      [
        '',
        'Exit status:',
        '  0  the log is intact, and every witness asked agrees (or none is set up: the report then says a restored older copy could not be detected)',
        "     witnesses asked: those in the policy, every one the log's own records ever named (also after a removal), and --witness/--git-witness",
        '  1  the log is not intact, or a witness says it was rolled back or forked: the report names what',
        '  2  bad usage or input (no data directory, a malformed key)',
        '  3  the records are intact, but the check against witnesses is incomplete (--offline, or a witness unreachable or holding none of it, a removed one too): run again when they answer',
      ].join('\n'),
    )
    .action(
      async (
        options: {
          file?: string;
          verificationKey?: string;
          publicKey?: string;
          workers?: number;
          progress?: boolean;
          acceptMissingAnchor?: boolean;
          offline?: boolean;
          witness?: string[];
          gitWitness?: string[];
          acceptRemovedWitness?: string[];
        },
        command: Command,
      ) => {
        const { dataDir, json } = globals(command);
        const { acceptMissingAnchor, parseChainPublicKeys, parseVerificationKeys, summarizeReport, verifyDataDir, verifyExportFile } =
          await auditModules();
        const { parseAuditorGitWitness, parseAuditorWitness } = await import('../../audit/witness/witnesses-to-ask.js');
        // Bad witness options are refused before the log is read, not after a long verify.
        const auditorWitnesses = [
          ...(options.witness ?? []).map(parseAuditorWitness),
          ...(options.gitWitness ?? []).map(parseAuditorGitWitness),
        ];
        if (options.file && options.acceptRemovedWitness?.length) {
          throw new ExecutorError(
            'INVALID_INPUT',
            '--accept-removed-witness is about the witnesses a data directory names; with --file, name the witnesses to ask with --witness/--git-witness.',
          );
        }
        const verificationKeys = options.verificationKey ? parseVerificationKeys(options.verificationKey) : [];
        const chainPublicKeys = options.publicKey ? parseChainPublicKeys(options.publicKey) : undefined;
        const accept = options.acceptMissingAnchor === true;
        const progress = progressPrinter({ terminal: process.stderr.isTTY === true && !json, forced: options.progress === true });
        const onProgress = progress.onProgress;
        const verified = options.file
          ? await verifyExportFile(options.file, verificationKeys, { onProgress, chainPublicKeys })
          : await (async () => {
              if (!fs.existsSync(dataDir)) throw new ExecutorError('NOT_FOUND', `There is no data directory at ${dataDir}.`, { dataDir });
              if ((verificationKeys.length || chainPublicKeys) && sealedKeysPresent(path.join(dataDir, 'keys'))) {
                // K0 or public keys given and the stored keys sealed by the app: verify with the given keys alone, here.
                return verifyDataDir(dataDir, {
                  keyStore: NO_STORED_KEYS(dataDir),
                  verificationKeys,
                  onProgress,
                  workers: options.workers,
                  chainPublicKeys,
                  acceptMissingAnchor: accept,
                });
              }
              const viaHost = chainPublicKeys ? undefined : await askHostIfKeysSealed(dataDir, (api) => verifyThroughHost(api, onProgress));
              return (
                viaHost?.value ??
                verifyDataDir(dataDir, {
                  keyStore: new FileKeyStore(dataDir),
                  verificationKeys,
                  onProgress,
                  workers: options.workers,
                  chainPublicKeys,
                  acceptMissingAnchor: accept,
                })
              );
            })();
        // The host verified without the flag: a finding of ANCHOR_MISSING alone becomes the same loud note a local run gives.
        const report = accept && !options.file ? acceptMissingAnchor(verified) : verified;
        progress.finish();
        // A database too damaged to name its witnesses is already the finding (DATABASE_CORRUPT): none is asked.
        const witnessed = options.file
          ? await askWitnessesAboutExport(options.file, auditorWitnesses, {
              offline: options.offline === true,
              logKeys: [...(chainPublicKeys?.values() ?? [])].map((keys) => keys.logKey),
            })
          : report.problem?.code === 'DATABASE_CORRUPT' && report.records === 0
            ? undefined
            : await askWitnesses(dataDir, {
                offline: options.offline === true,
                auditor: auditorWitnesses,
                acceptRemoved: options.acceptRemovedWitness ?? [],
              });
        if (witnessed) applyWitnessReports(report, witnessed.reports);
        const output = witnessed ? { ...report, witnesses: witnessed.reports, witnessesAsked: !options.offline } : report;
        const silent = witnessed?.reports.filter(unanswered) ?? [];
        const incomplete = silent.length > 0 || (witnessed !== undefined && options.offline === true && witnessed.reports.length > 0);
        const noWitness = witnessed === undefined || witnessed.reports.length === 0;
        const namedByExport = options.file && noWitness && report.ok ? await exportNamedWitnesses(options.file) : '';
        print(json, output, () => {
          const summary = summarizeReport(report).split('\n');
          // Exit 3: the records hold, but the check against the witnesses is not done; the first line says so, and what to do.
          if (report.ok && incomplete) {
            summary[0] = summary[0]!.replace(
              /^audit log intact:/,
              'audit records intact, but the check against witnesses is INCOMPLETE (exit 3):',
            );
            const removedOnly = !options.offline && silent.every((witness) => witness.source === 'log');
            const todo = options.offline
              ? 'run again without --offline'
              : removedOnly
                ? `run again when the removed witness(es) answer, or, if you know they are gone for good, with ${silent.map((witness) => `--accept-removed-witness ${visibleLine(witness.witness)}`).join(' ')}`
                : 'run again when the witnesses answer';
            summary.splice(1, 0, `  what to do: ${todo}; until then a restored older copy of the whole data directory would not show here`);
          }
          const lonely =
            report.ok && noWitness
              ? [
                  options.file
                    ? `  note: no witness was asked, so an export made from a restored older copy of the data directory, or from a diverging copy, reads as intact: give --witness URL=VKEY or --git-witness REMOTE[#BRANCH] of a witness the log was published to${namedByExport}`
                    : '  note: no witness was asked, so a restored older copy of the whole data directory could not be detected: set one up with `executor witness add URL VKEY` or `executor witness add-git REMOTE`',
                ]
              : [];
          return [
            ...summary,
            ...(witnessed ? witnessLines(witnessed.reports, options.offline === true) : []),
            ...lonely,
            ...report.warnings.map((warning) => `  note: ${warning}`),
          ].join('\n');
        });
        process.exitCode = !report.ok ? EXIT_NOT_INTACT : incomplete ? EXIT_WITNESS_UNANSWERED : 0;
      },
    );

  audit
    .command('export')
    .description('write records (with the checkpoints that seal them) for offline verification')
    .option('--from <seq>', 'first record', integer('--from'))
    .option('--to <seq>', 'last record', integer('--to'))
    .option('--format <format>', 'output format', 'jsonl')
    .option('--out <file>', 'write to this file instead of standard output')
    .action(async (options: { from?: number; to?: number; format: string; out?: string }, command: Command) => {
      const { dataDir } = globals(command);
      if (options.format !== 'jsonl') throw new ExecutorError('INVALID_INPUT', `Export knows one format, jsonl; not "${options.format}".`);
      const { DEFAULT_CHECKPOINT_EVERY, exportAudit, fileLineWriter } = await auditModules();
      const { openOutputFile, outputFileFailure, refuseInsideDataDir } = await import('../../fs/output-file.js');
      const out = options.out ? path.resolve(options.out) : undefined;
      if (out) refuseInsideDataDir(out, dataDir);
      await withReader(dataDir, (reader) => {
        const file = out ? openOutputFile(out) : undefined;
        const fd = file ? file.fd : 1;
        try {
          const writer = fileLineWriter(fd);
          const keyring = reader.keyringIfReadable();
          if (!keyring)
            process.stderr.write(
              "note: the audit keys are sealed by the app or missing here, so this export's header is not signed and `audit verify --file` will refuse it (BAD_HEADER); export from the running app (the window's Export) instead\n",
            );
          const written = exportAudit(reader.db, reader.logId(), writer, {
            from: options.from,
            to: options.to,
            checkpointEvery: DEFAULT_CHECKPOINT_EVERY,
            keyring,
          });
          writer.flush();
          file?.commit();
          if (out)
            process.stderr.write(
              `exported records ${written.from}..${written.to} (${written.records}) and ${written.checkpoints} checkpoint(s) to ${out}\n`,
            );
        } catch (error) {
          // A disk that fills, or a file that cannot take the bytes, is said naming the file; the incomplete
          // copy is removed and a file that was there before is left as it was.
          if (!out) throw error;
          try {
            file?.abandon();
          } catch {
            /* the error below is the one worth saying */
          }
          throw outputFileFailure(error, out);
        }
      });
    });

  audit
    .command('show')
    .description('show audit records, oldest first')
    .option('--step <stepId>')
    .option('--plan <planId>')
    .option('--action <action>', 'e.g. step.approved')
    .option('--channel <channel>', 'who acted, by channel: window, web, cli, mcp, policy or system')
    .option('--user <user>', 'who acted, by the user the record names')
    .option('--since <time>', 'ISO time, e.g. 2026-01-31T12:00:00Z')
    .option('--until <time>', 'ISO time: records at or before it')
    .option('--limit <n>', 'at most this many records', integer('--limit'), 1000)
    .action(
      async (
        options: {
          step?: string;
          plan?: string;
          action?: string;
          channel?: string;
          user?: string;
          since?: string;
          until?: string;
          limit: number;
        },
        command: Command,
      ) => {
        const { dataDir, json } = globals(command);
        const { queryAudit } = await auditModules();
        const { pickId } = await import('../id-prefix.js');
        const entries = await withReader(dataDir, (reader) => {
          // A step or plan id prefix (or the window's short form) names the one id the log holds that fits it.
          const fromLog = (column: 'step_id' | 'plan_id', kind: 'step' | 'plan', given: string) => {
            const start = given.trim().split(/…|\.\.\./)[0]!;
            const ids = reader.db
              .prepare(`SELECT DISTINCT ${column} AS id FROM audit_records WHERE substr(${column}, 1, ?) = ? LIMIT 501`)
              .all([...start].length, start) as { id: string }[];
            return pickId(
              kind,
              given,
              ids.map((row) => row.id),
              ids.length > 500,
            );
          };
          if (options.step) options.step = fromLog('step_id', 'step', options.step);
          if (options.plan) options.plan = fromLog('plan_id', 'plan', options.plan);
          const collected: AuditEntry[] = [];
          let cursor: string | null = null;
          do {
            const page = queryAudit(reader.db, {
              filters: {
                stepId: options.step,
                planId: options.plan,
                action: options.action,
                channel: options.channel,
                user: options.user,
                since: options.since,
                until: options.until,
              },
              order: 'asc',
              cursor,
              limit: Math.min(1000, options.limit - collected.length),
            });
            collected.push(...page.entries);
            cursor = page.nextCursor;
          } while (cursor && collected.length < options.limit);
          return { collected, titles: json ? new Map<string, string>() : stepTitles(reader.db, collected) };
        });
        print(json, entries.collected, () =>
          entries.collected.length
            ? entries.collected.map((entry) => entryLines(entry, entries.titles)).join('\n')
            : 'No audit records match.',
        );
      },
    );

  registerAuditProofCommands(audit);

  audit
    .command('hash')
    .description('answer "was it this value?": the salted HMAC the log stores in place of a secret, and the records that hold it')
    .argument('<value>')
    .option(
      '--progress',
      'print "checked N of M records" on stderr as it goes, also when stderr is not a terminal (on a terminal it does by default)',
    )
    .action(async (value: string, options: { progress?: boolean }, command: Command) => {
      const { dataDir, json } = globals(command);
      if (!fs.existsSync(dataDir)) throw new ExecutorError('NOT_FOUND', `There is no data directory at ${dataDir}.`, { dataDir });
      const progress = progressPrinter({
        terminal: process.stderr.isTTY === true && !json,
        forced: options.progress === true,
        verb: 'searching',
      });
      const onProgress = progress.onProgress && ((checked: number, total: number) => progress.onProgress!({ checked, total }));
      // The salt is among the keys: sealed ones stay in the app, which searches the log for us.
      const found =
        (await askHostIfKeysSealed(dataDir, (api) => hashThroughHost(api, value, progress.onProgress)))?.value ??
        (await withReader(dataDir, (reader) => reader.hashSecret(value, onProgress)));
      progress.finish();
      // Each record salts its own digests, so no one digest names the value: the records that hold it do.
      print(json, found, () =>
        found.seqs.length
          ? `held by record(s) ${found.seqs.join(', ')}${found.seqs.length >= 1000 ? ' (the first 1,000)' : ''}`
          : 'no record holds it',
      );
    });
}
