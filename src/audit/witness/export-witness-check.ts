import { exportReach, readExportFile, sealedHeads, type ParsedExport } from '../export/audit-export.js';
import { logNoteVerifier, logOrigin } from '../format/checkpoint-note.js';
import { CompactRange } from '../format/merkle.js';
import { sha256 } from '../format/record-format.js';
import type { NoteVerifier } from '../format/signed-note.js';
import { recordLeafHash } from '../log/audit-tree.js';
import { readGitWitness } from './git-witness.js';
import type { AskedWitness, WitnessReport } from './witness-check.js';
import { WitnessUnreachable, fetchCosignedCheckpoint } from './witness-client.js';
import { witnessVerifier } from './witness-publisher.js';

/**
 * An export checked against witnesses: an auditor holds the file and asks a witness the log was
 * published to. A witness's checkpoint of size N is compared with the root the export gives at N:
 * the records' own tree for N in [from − 1, to] (with the tree-prefix line when from > 1), or the
 * root a signed certificate or checkpoint of the export names for N. A checkpoint larger than
 * anything the export shows the log had reached, which the witness held before the export was made,
 * shows the export came from a rolled-back copy. Anything else cannot be compared from the file.
 */

/** What the export says of the log, for the witness checks. */
export interface ExportedLog {
  origin: string;
  verifiers: NoteVerifier[];
  from: number;
  to: number;
  /** The most records the export's own header, certificates and checkpoints show the log had reached. */
  reached: number;
  /** When the export was made (ms), from its signed header. */
  exportedAt: number;
  /** The root at `size` the export gives, or undefined when the file cannot tell. */
  rootAt(size: number): Buffer | undefined;
}

/** The log keys of the export's key records (and the auditor's own): a witness's note must be signed by one of them. */
function logKeysOf(parsed: ParsedExport, givenLogKeys: readonly Buffer[]): NoteVerifier[] {
  const keys: Buffer[] = [...givenLogKeys];
  for (const line of [...parsed.keyRecords, ...parsed.records]) {
    try {
      const body = JSON.parse(line.body) as { action?: unknown; args?: { publicKey?: unknown } };
      if ((body.action === 'key.created' || body.action === 'key.rotated') && typeof body.args?.publicKey === 'string')
        keys.push(Buffer.from(body.args.publicKey, 'base64'));
    } catch {
      /* verify reports it */
    }
  }
  const verifiers: NoteVerifier[] = [];
  for (const key of keys) {
    try {
      const verifier = logNoteVerifier(parsed.header.logId, key);
      if (!verifiers.some((known) => known.keyHash === verifier.keyHash && known.vkey === verifier.vkey)) verifiers.push(verifier);
    } catch {
      /* a key that does not parse signs nothing */
    }
  }
  return verifiers;
}

/** Reads an export for the witness checks (the file was verified before: this trusts nothing it did not). */
export function readExportedLog(file: string, givenLogKeys: readonly Buffer[] = []): ExportedLog {
  const parsed = readExportFile(file);
  const { from, to } = parsed.header;
  const roots = new Map<number, Buffer>();
  // The records' own tree: from the tree-prefix (or leaf 0), one leaf per record line.
  let range: CompactRange | undefined;
  if (from === 1) range = CompactRange.empty(0);
  else if (parsed.treePrefix?.size === from - 1) {
    try {
      range = CompactRange.fromHashes(
        0,
        from - 1,
        parsed.treePrefix.hashes.map((hash) => Buffer.from(hash, 'hex')),
      );
    } catch {
      range = undefined;
    }
  }
  if (range) {
    roots.set(range.end, range.root());
    for (const line of parsed.records) {
      range.append(recordLeafHash(sha256(Buffer.concat([Buffer.from(line.body, 'utf8'), Buffer.from(line.mac, 'hex')]))));
      roots.set(range.end, range.root());
    }
  }
  for (const sealed of sealedHeads(parsed))
    if (sealed.rootHash && !roots.has(sealed.seq)) roots.set(sealed.seq, Buffer.from(sealed.rootHash, 'hex'));
  return {
    origin: logOrigin(parsed.header.logId),
    verifiers: logKeysOf(parsed, givenLogKeys),
    from,
    to,
    reached: exportReach(parsed),
    exportedAt: Date.parse(parsed.header.exportedAt),
    rootAt: (size) => roots.get(size),
  };
}

/** One checkpoint a witness stated, and when it stated it (cosigned, or committed to the branch). */
interface Statement {
  size: number;
  rootHash: Buffer;
  at: number | null;
  where: string;
}

type Judged = 'consistent' | 'forked' | 'rolled_back' | 'not_comparable';

function judge(log: ExportedLog, statement: Statement): Judged {
  const root = log.rootAt(statement.size);
  if (root) return root.equals(statement.rootHash) ? 'consistent' : 'forked';
  // Held by the witness before the export was made, and more than the export says the log had then: the export's log was behind it.
  if (statement.size > log.reached && statement.at !== null && statement.at <= log.exportedAt) return 'rolled_back';
  return 'not_comparable';
}

function verdictOf(
  name: string,
  log: ExportedLog,
  statements: Statement[],
): Pick<WitnessReport, 'status' | 'newest' | 'contradicts' | 'message'> {
  const judged = statements.map((statement) => ({ statement, judged: judge(log, statement) }));
  const pick = (kind: Judged) => judged.filter((entry) => entry.judged === kind).map((entry) => entry.statement);
  const largest = (list: Statement[]) => list.reduce((a, b) => (b.size > a.size ? b : a));
  const newestOf = (statement: Statement) => ({
    size: statement.size,
    rootHash: statement.rootHash.toString('base64'),
    cosignedAt: statement.at === null ? null : new Date(statement.at).toISOString(),
  });
  const range = `records ${log.from}..${log.to}`;
  const rolledBack = pick('rolled_back');
  if (rolledBack.length) {
    const against = largest(rolledBack);
    return {
      status: 'rolled_back',
      newest: newestOf(largest(statements)),
      contradicts: { size: against.size, rootHash: against.rootHash.toString('base64'), where: against.where },
      message: `${name} held a checkpoint of ${against.size} records (${against.where}) before this export was made (${new Date(log.exportedAt).toISOString()}), but the export (${range}) shows its log had reached only ${log.reached}: it was made from a rolled-back copy`,
    };
  }
  const forked = pick('forked');
  if (forked.length) {
    const against = forked[0]!;
    return {
      status: 'forked',
      newest: newestOf(largest(statements)),
      contradicts: { size: against.size, rootHash: against.rootHash.toString('base64'), where: against.where },
      message: `${name} holds a checkpoint of ${against.size} records (${against.where}) whose root is not the root this export (${range}) gives at that size: the export's history was rewritten, or it comes from a diverging copy`,
    };
  }
  const consistent = pick('consistent');
  if (consistent.length) {
    const best = largest(consistent);
    return {
      status: 'consistent',
      newest: newestOf(best),
      message: `${name} holds a checkpoint of ${best.size} records (${best.where}); this export (${range}) gives the same root at that size${consistent.length > 1 ? ` (${consistent.length} checkpoints compared)` : ''}`,
    };
  }
  const newest = largest(statements);
  return {
    status: 'not_comparable',
    newest: newestOf(newest),
    message: `${name}'s checkpoint of ${newest.size} records (${newest.where}) cannot be compared with this export (${range}, its log had reached at least ${log.reached} records when exported at ${new Date(log.exportedAt).toISOString()}): the file holds no root at that size. Export through ${newest.size} records (or verify the data directory) to check it`,
  };
}

/** Asks each witness (a tlog-witness's newest cosigned checkpoint, a git branch's whole history) and compares it with the export. */
export async function checkWitnessesAgainstExport(witnesses: readonly AskedWitness[], log: ExportedLog): Promise<WitnessReport[]> {
  return Promise.all(
    witnesses.map(async ({ config: witness, source, cloneDir }): Promise<WitnessReport> => {
      const where = witness.kind === 'http' ? witness.url : `${witness.remote} (${witness.branch})`;
      const base = { witness: witness.name, kind: witness.kind, source, where, localSize: log.to };
      try {
        let statements: Statement[];
        if (witness.kind === 'http') {
          const cosigned = await fetchCosignedCheckpoint({ url: witness.url, verifier: witnessVerifier(witness) }, log);
          if (!cosigned)
            return {
              ...base,
              status: 'no_checkpoint',
              newest: null,
              message: `${witness.name} serves no checkpoint of this log (GET …/checkpoint): an export can be checked only against what a witness shows`,
            };
          statements = [
            {
              size: cosigned.checkpoint.size,
              rootHash: cosigned.checkpoint.rootHash,
              at: cosigned.timestamp * 1000,
              where: `cosigned ${new Date(cosigned.timestamp * 1000).toISOString()}`,
            },
          ];
        } else {
          if (!cloneDir) throw new WitnessUnreachable(`${witness.name}: no folder to fetch it into`);
          const history = await readGitWitness({ name: witness.name, remote: witness.remote, branch: witness.branch, cloneDir }, log);
          if (!history || history.notes.length === 0)
            return {
              ...base,
              status: history ? 'unreachable' : 'no_checkpoint',
              newest: null,
              message: history
                ? `${witness.name}: no note on the branch verifies with this export's log keys`
                : `${witness.name} holds no checkpoint of this log`,
            };
          statements = history.notes.map((note) => ({
            size: note.checkpoint.size,
            rootHash: note.checkpoint.rootHash,
            at: note.committedAt === null ? null : Date.parse(note.committedAt),
            where: `commit ${note.commit.slice(0, 12)}${note.committedAt ? `, ${note.committedAt}` : ''}`,
          }));
        }
        return { ...base, ...verdictOf(witness.name, log, statements) };
      } catch (error) {
        return { ...base, status: 'unreachable', newest: null, message: `${witness.name} could not be asked: ${(error as Error).message}` };
      }
    }),
  );
}
