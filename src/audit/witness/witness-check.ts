import type { WitnessConfig } from '../../policy/policy-file.js';
import type { CosignatureStore } from './cosignature-store.js';
import type { PolicyRecordRef } from './named-witnesses.js';
import { readGitWitness } from './git-witness.js';
import { WitnessUnreachable, fetchCosignedCheckpoint } from './witness-client.js';
import { gitTarget, publishToHttpWitness, witnessVerifier } from './witness-publisher.js';
import { standingAgainst, type WitnessedLog } from './witnessed-log.js';

/**
 * How the log stands against one witness at verify:
 * - consistent: the witness's newest checkpoint is a prefix of this log (same root at its size);
 * - rolled_back: the witness saw more records than this log holds (restored from an older copy, or its tail cut);
 * - forked: this log's root at the witness's size is another (history rewritten, or a diverging copy);
 * - unreachable: the witness could not be asked, or its answer did not verify: nothing is known;
 * - no_checkpoint: the witness holds nothing of this log yet: nothing is known either.
 */
export type WitnessStatus = 'consistent' | 'rolled_back' | 'forked' | 'unreachable' | 'no_checkpoint';

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
  /** The newest checkpoint the witness holds for this log, when it answered. */
  newest: { size: number; rootHash: string; cosignedAt: string | null } | null;
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
    return {
      ...base,
      status,
      newest: {
        size: cosigned.checkpoint.size,
        rootHash: cosigned.checkpoint.rootHash.toString('base64'),
        cosignedAt: new Date(cosigned.timestamp * 1000).toISOString(),
      },
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
  const remote = await readGitWitness(cloneDir ? { ...target, cloneDir } : target, log);
  if (!remote)
    return { ...base, status: 'no_checkpoint', newest: null, message: describe('no_checkpoint', witness.name, null, base.localSize) };
  const status = standingAgainst(log, remote.checkpoint);
  return {
    ...base,
    status,
    newest: { size: remote.checkpoint.size, rootHash: remote.checkpoint.rootHash.toString('base64'), cosignedAt: null },
    message: describe(status, witness.name, remote.checkpoint.size, base.localSize),
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
