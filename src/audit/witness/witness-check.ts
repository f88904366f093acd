import type { WitnessConfig } from '../../policy/policy-file.js';
import type { CosignatureStore } from './cosignature-store.js';
import type { PolicyRecordRef } from './named-witnesses.js';
import { readGitWitness, type BranchNote } from './git-witness.js';
import { WitnessUnreachable, fetchCosignedCheckpoint } from './witness-client.js';
import { gitTarget, publishToHttpWitness, witnessVerifier } from './witness-publisher.js';
import { standingAgainst, standingAgainstAll, type WitnessedLog } from './witnessed-log.js';

/**
 * How the log stands against one witness at verify:
 * - consistent: the witness's newest checkpoint is a prefix of this log (same root at its size);
 * - rolled_back: the witness saw more records than this log holds (restored from an older copy, or its tail cut);
 * - forked: this log's root at the witness's size is another (history rewritten, or a diverging copy);
 * - unreachable: the witness could not be asked, or its answer did not verify: nothing is known;
 * - no_checkpoint: the witness holds nothing of this log yet: nothing is known either;
 * - not_comparable (an export only): what the witness holds lies where the file gives no root: nothing is known.
 */
export type WitnessStatus = 'consistent' | 'rolled_back' | 'forked' | 'unreachable' | 'no_checkpoint' | 'not_comparable';

/** Why verify asks a witness: today's policy names it, only the log's records do (it was removed), or the auditor named it. */
export type WitnessSource = 'policy' | 'log' | 'auditor';

/** A witness verify asks, with why. */
export interface AskedWitness {
  config: WitnessConfig;
  source: WitnessSource;
  /** For a witness the log named but today's policy does not: the record that removed it (null: policy.json was edited and no record says so). */
  removed?: PolicyRecordRef | null;
  /** Where to clone a git witness (default: the data directory's clone for its name). */
  cloneDir?: string;
}

export interface WitnessReport {
  witness: string;
  kind: WitnessConfig['kind'];
  source?: WitnessSource;
  /** The removal, for a witness only the log still names. */
  removed?: PolicyRecordRef | null;
  /** A removed witness whose silence the auditor accepted (--accept-removed-witness). */
  accepted?: boolean;
  /** The URL, or the git remote and branch. */
  where: string;
  status: WitnessStatus;
  /**
   * The largest checkpoint the witness vouches for, when it answered: a tlog-witness's newest cosigned one
   * (it only grows), a git branch's largest note in all its history (not the last one appended).
   */
  newest: { size: number; rootHash: string; cosignedAt: string | null } | null;
  /** For rolled_back and forked: the witness's statement the log contradicts, and where it stands (commit, or cosigned time). */
  contradicts?: { size: number; rootHash: string; where: string };
  localSize: number;
  message: string;
}

function describe(status: WitnessStatus, witness: string, newestSize: number | null, localSize: number): string {
  switch (status) {
    case 'consistent':
      return `${witness} holds a checkpoint of ${newestSize} records; this log (${localSize} records) is consistent with it`;
    case 'rolled_back':
      return `${witness} holds a checkpoint of ${newestSize} records, but this log holds only ${localSize}: it was rolled back or its tail cut off`;
    case 'forked':
      return `${witness} holds a checkpoint of ${newestSize} records whose root is not this log's root at that size: history was rewritten, or this is a diverging copy`;
    case 'no_checkpoint':
      return `${witness} holds no checkpoint of this log: it cannot vouch for it (publish with \`executor witness publish\`)`;
    default:
      return `${witness} could not be asked`;
  }
}

async function checkHttp(
  witness: Extract<WitnessConfig, { kind: 'http' }>,
  log: WitnessedLog,
  store: CosignatureStore | undefined,
): Promise<WitnessReport> {
  const base = { witness: witness.name, kind: witness.kind, where: witness.url, localSize: log.size() };
  const cosigned = await fetchCosignedCheckpoint({ url: witness.url, verifier: witnessVerifier(witness) }, log);
  if (cosigned) {
    const status = standingAgainst(log, cosigned.checkpoint);
    const newest = {
      size: cosigned.checkpoint.size,
      rootHash: cosigned.checkpoint.rootHash.toString('base64'),
      cosignedAt: new Date(cosigned.timestamp * 1000).toISOString(),
    };
    return {
      ...base,
      status,
      newest,
      ...(status !== 'consistent'
        ? { contradicts: { size: newest.size, rootHash: newest.rootHash, where: `cosigned ${newest.cosignedAt}` } }
        : {}),
      message: describe(status, witness.name, cosigned.checkpoint.size, base.localSize),
    };
  }
  // The monitoring GET is optional in tlog-witness: ask with add-checkpoint instead. Its 409 names the
  // witness's size, and a proof from that size either holds (cosigned: consistent) or does not (forked).
  // From old size 0, whatever this data directory remembers of the witness: that memory may be as old as the copy.
  const probe = await publishToHttpWitness(witness, log, { newest: () => undefined, add: (row) => store?.add(row) });
  if (probe.kind === 'cosigned' || probe.kind === 'up_to_date') {
    return {
      ...base,
      status: 'consistent',
      newest: { size: probe.size, rootHash: log.rootAt(probe.size).toString('base64'), cosignedAt: null },
      message: describe('consistent', witness.name, probe.size, base.localSize),
    };
  }
  if (probe.kind === 'rolled_back' || probe.kind === 'forked') {
    return {
      ...base,
      status: probe.kind,
      newest: { size: probe.size, rootHash: '', cosignedAt: null },
      message: describe(probe.kind, witness.name, probe.size, base.localSize),
    };
  }
  if (probe.kind === 'nothing_to_publish')
    return { ...base, status: 'no_checkpoint', newest: null, message: describe('no_checkpoint', witness.name, null, base.localSize) };
  return {
    ...base,
    status: 'unreachable',
    newest: null,
    message: `${witness.name} could not be asked: ${probe.kind === 'refused' || probe.kind === 'unreachable' ? probe.message : probe.kind}`,
  };
}

async function checkGit(
  dataDir: string,
  witness: Extract<WitnessConfig, { kind: 'git' }>,
  log: WitnessedLog,
  cloneDir?: string,
): Promise<WitnessReport> {
  const base = { witness: witness.name, kind: witness.kind, where: `${witness.remote} (${witness.branch})`, localSize: log.size() };
  const target = gitTarget(dataDir, witness);
  const history = await readGitWitness(cloneDir ? { ...target, cloneDir } : target, log);
  if (!history)
    return { ...base, status: 'no_checkpoint', newest: null, message: describe('no_checkpoint', witness.name, null, base.localSize) };
  const unverified = history.unverified.length
    ? `; ${history.unverified.length} note(s) on the branch do not verify with this log's keys and were not counted (the first in commit ${history.unverified[0]!.commit.slice(0, 12)}: ${history.unverified[0]!.reason})`
    : '';
  const verdict = standingAgainstAll(log, history.notes, (note) => note.checkpoint);
  if (!verdict || (verdict.standing === 'consistent' && history.newestUnverified)) {
    // The branch's last note is not this log's: someone wrote to it who should not have, and the notes beneath prove nothing of now.
    return {
      ...base,
      status: 'unreachable',
      newest: null,
      message: `${witness.name}: its newest checkpoint note does not verify with this log's key${unverified}`,
    };
  }
  const largest =
    verdict.standing === 'rolled_back' ? verdict.against : history.notes.reduce((a, b) => (b.checkpoint.size > a.checkpoint.size ? b : a));
  const newest = {
    size: largest.checkpoint.size,
    rootHash: largest.checkpoint.rootHash.toString('base64'),
    cosignedAt: largest.committedAt,
  };
  const at = (note: BranchNote) => `commit ${note.commit.slice(0, 12)}${note.committedAt ? `, ${note.committedAt}` : ''}`;
  const against = verdict.against;
  const lastWords =
    history.newest && history.newest.checkpoint.size < against.checkpoint.size
      ? `; the branch's newest note states only ${history.newest.checkpoint.size} records (${at(history.newest)}), but a witness's history only grows: a note appended later does not undo an earlier one`
      : '';
  if (verdict.standing === 'consistent')
    return {
      ...base,
      status: 'consistent',
      newest,
      message: `${witness.name} holds ${history.notes.length} checkpoint note(s) of this log, up to ${against.checkpoint.size} records; this log (${base.localSize} records) is consistent with every one${unverified}`,
    };
  return {
    ...base,
    status: verdict.standing,
    newest,
    contradicts: { size: against.checkpoint.size, rootHash: against.checkpoint.rootHash.toString('base64'), where: at(against) },
    message:
      verdict.standing === 'rolled_back'
        ? `${witness.name} holds a checkpoint note of ${against.checkpoint.size} records (${at(against)}), but this log holds only ${base.localSize}: it was rolled back or its tail cut off${lastWords}${unverified}`
        : `${witness.name} holds a checkpoint note of ${against.checkpoint.size} records (${at(against)}) whose root is not this log's root at that size: history was rewritten, or this is a diverging copy${unverified}`,
  };
}

function asked(witness: WitnessConfig | AskedWitness): AskedWitness {
  return 'config' in witness ? witness : { config: witness, source: 'policy' };
}

/** Asks every witness at once; an error of one is that witness's "unreachable", never the whole verify's. */
export async function checkWitnesses(
  dataDir: string,
  witnesses: readonly (WitnessConfig | AskedWitness)[],
  log: WitnessedLog,
  store?: CosignatureStore,
): Promise<WitnessReport[]> {
  return Promise.all(
    witnesses.map(asked).map(async ({ config: witness, source, removed, cloneDir }) => {
      const why = { source, ...(removed !== undefined ? { removed } : {}) };
      try {
        const report = witness.kind === 'http' ? await checkHttp(witness, log, store) : await checkGit(dataDir, witness, log, cloneDir);
        return { ...report, ...why };
      } catch (error) {
        const where = witness.kind === 'http' ? witness.url : `${witness.remote} (${witness.branch})`;
        const reason = error instanceof WitnessUnreachable ? error.message : (error as Error).message;
        return {
          witness: witness.name,
          kind: witness.kind,
          where,
          status: 'unreachable' as const,
          newest: null,
          localSize: log.size(),
          message: `${witness.name} could not be asked: ${reason}`,
          ...why,
        };
      }
    }),
  );
}
