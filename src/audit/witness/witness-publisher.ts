import crypto from 'node:crypto';
import path from 'node:path';
import type { WitnessConfig } from '../../policy/policy-file.js';
import { parseVerifierKey, type NoteVerifier } from '../format/signed-note.js';
import type { CosignatureStore } from './cosignature-store.js';
import { publishToGit, type GitWitnessTarget } from './git-witness.js';
import { WitnessUnreachable, addCheckpoint, sendLogKeyHandover } from './witness-client.js';
import type { WitnessedLog } from './witnessed-log.js';

/** What one publish to one witness came to. */
export type PublishResult =
  | { witness: string; kind: 'cosigned' | 'published' | 'up_to_date'; size: number }
  /** The witness holds a checkpoint this log is not consistent with (it is behind the witness, or forked from it). */
  | { witness: string; kind: 'rolled_back' | 'forked'; size: number; message: string }
  /** The witness refused (403 bad log signature, 404 unknown log, 400) and will until its configuration changes. */
  | { witness: string; kind: 'refused'; message: string }
  /** Not reached (network, timeout, 5xx, git failure): retried with backoff. */
  | { witness: string; kind: 'unreachable'; message: string }
  | { witness: string; kind: 'nothing_to_publish' };

/** Where a git witness's clone lives in the data directory: one folder per name, never one inside another's ("a" and "a/b"). */
export function gitCloneDir(dataDir: string, witnessName: string): string {
  const readable = witnessName.replace(/[^A-Za-z0-9._-]/g, '_');
  return path.join(dataDir, 'witnesses', `${readable}-${crypto.createHash('sha256').update(witnessName).digest('hex').slice(0, 8)}`);
}

export function gitTarget(dataDir: string, witness: Extract<WitnessConfig, { kind: 'git' }>): GitWitnessTarget {
  return { name: witness.name, remote: witness.remote, branch: witness.branch, cloneDir: gitCloneDir(dataDir, witness.name) };
}

export function witnessVerifier(witness: Extract<WitnessConfig, { kind: 'http' }>): NoteVerifier {
  return parseVerifierKey(witness.vkey);
}

/** Sends "old N" rounds to one tlog-witness until it cosigns, refuses, or proves us inconsistent. */
export async function publishToHttpWitness(
  witness: Extract<WitnessConfig, { kind: 'http' }>,
  log: WitnessedLog,
  store: Pick<CosignatureStore, 'newest' | 'add'>,
): Promise<PublishResult> {
  const newest = log.newestCheckpoint();
  if (!newest) return { witness: witness.name, kind: 'nothing_to_publish' };
  const target = { url: witness.url, verifier: witnessVerifier(witness) };
  const stored = store.newest(witness.name);
  if (stored && stored.size === newest.size && stored.rootHash.equals(newest.rootHash))
    return { witness: witness.name, kind: 'up_to_date', size: newest.size };
  let oldSize = stored?.size ?? 0;
  let handedOver = false;
  // Two rounds cover "our memory of the witness was stale" (409, then the right old size); a third 409 means it moves under us.
  for (let round = 0; round < 3; round += 1) {
    if (oldSize > newest.size) {
      return {
        witness: witness.name,
        kind: 'rolled_back',
        size: oldSize,
        message: `${witness.name} has cosigned ${oldSize} records of this log; it holds only ${newest.size}`,
      };
    }
    const proof = oldSize === 0 || oldSize === newest.size ? [] : log.consistencyProof(oldSize, newest.size);
    const outcome = await addCheckpoint(target, newest.note, oldSize, proof);
    if (outcome.kind === 'cosigned') {
      store.add({
        witness: witness.name,
        size: newest.size,
        rootHash: newest.rootHash,
        signature: outcome.line.trimEnd(),
        cosignedAt: outcome.timestamp,
        note: newest.note,
      });
      return { witness: witness.name, kind: 'cosigned', size: newest.size };
    }
    if (outcome.kind === 'conflict') {
      oldSize = outcome.size;
      continue;
    }
    if (outcome.kind === 'inconsistent') {
      return {
        witness: witness.name,
        kind: 'forked',
        size: oldSize,
        message: `${witness.name} cosigned ${oldSize} records of this log, and this log's first ${oldSize} records are not what it saw: ${outcome.message}`,
      };
    }
    if (outcome.status === 403 && !handedOver) {
      // After `executor keys rotate` the witness knows only the outgoing log key: hand it the rotation's signed link and try again.
      const handover = await handOverLogKey(witness, log);
      if (handover === 'learned') {
        handedOver = true;
        round -= 1;
        continue;
      }
      return {
        witness: witness.name,
        kind: 'refused',
        message: `${witness.name} refused the checkpoint (HTTP 403): ${outcome.message}. ${handover}`,
      };
    }
    return {
      witness: witness.name,
      kind: 'refused',
      message: `${witness.name} refused the checkpoint (HTTP ${outcome.status}): ${outcome.message}`,
    };
  }
  throw new WitnessUnreachable(`${witness.name} kept answering 409 with another size`);
}

/** What a 403 asks of the person, when the witness cannot learn the new log key from the log itself. */
export function logKeyAdvice(log: WitnessedLog): string {
  const current = log.verifiers.at(-1)?.vkey;
  return `The witness does not trust this log's current checkpoint key${log.logKeyHandovers?.().length ? ' (it changed at `executor keys rotate`, and this witness does not take the handover the rotation record carries)' : ''}: give its operator the line \`executor witness log-key\` prints${current ? ` (${log.origin}=${current})` : ''}; for \`executor witness serve\`, restart it with that --log.`;
}

/** Sends each rotation's handover note, oldest first; 'learned' when the witness took them, else the words for the person. */
async function handOverLogKey(witness: Extract<WitnessConfig, { kind: 'http' }>, log: WitnessedLog): Promise<'learned' | string> {
  const notes = log.logKeyHandovers?.() ?? [];
  if (notes.length === 0) return logKeyAdvice(log);
  let learned = false;
  for (const note of notes) {
    const answer = await sendLogKeyHandover(witness.url, note);
    if (answer.kind === 'unsupported') return logKeyAdvice(log);
    // A handover the witness already followed past (an older rotation) is refused or a no-op; the newest one decides.
    learned = answer.kind === 'learned';
  }
  return learned ? 'learned' : logKeyAdvice(log);
}

export async function publishToGitWitness(
  dataDir: string,
  witness: Extract<WitnessConfig, { kind: 'git' }>,
  log: WitnessedLog,
  store: CosignatureStore,
  now: () => number,
): Promise<PublishResult> {
  const outcome = await publishToGit(gitTarget(dataDir, witness), log);
  if (!outcome) return { witness: witness.name, kind: 'nothing_to_publish' };
  if (outcome.kind === 'diverged') {
    return {
      witness: witness.name,
      kind: outcome.standing,
      size: outcome.remote.size,
      message:
        outcome.standing === 'rolled_back'
          ? `${witness.remote} (${witness.branch}) holds a checkpoint of ${outcome.remote.size} records; this log holds only ${log.size()}`
          : `${witness.remote} (${witness.branch}) holds a checkpoint of ${outcome.remote.size} records whose root differs from this log's`,
    };
  }
  const newest = log.newestCheckpoint()!;
  if (outcome.kind === 'published')
    store.add({
      witness: witness.name,
      size: newest.size,
      rootHash: newest.rootHash,
      signature: null,
      cosignedAt: Math.floor(now() / 1000),
      note: newest.note,
    });
  return { witness: witness.name, kind: outcome.kind, size: outcome.size };
}

export interface WitnessPublisherOptions {
  dataDir: string;
  /** The log as it stands now (read afresh at each publish), or undefined before it has a checkpoint. */
  log: () => WitnessedLog | undefined;
  store: CosignatureStore;
  witnesses: () => readonly WitnessConfig[];
  /** First retry after this long, doubling to maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  now?: () => number;
  /** Each result, for the host's log line and for tests that wait on an event. */
  onResult?: (result: PublishResult) => void;
}

interface Lane {
  running: Promise<void> | undefined;
  again: boolean;
  failures: number;
  retry: NodeJS.Timeout | undefined;
  last: PublishResult | undefined;
}

/**
 * Publishes each new checkpoint to every witness, off the commit path: notify() returns at once,
 * each witness has its own lane (one request at a time, a newer checkpoint replacing one waiting),
 * an unreachable witness is retried with doubling backoff, and nothing here can fail or delay a step.
 */
export class WitnessPublisher {
  private readonly lanes = new Map<string, Lane>();
  private stopped = false;

  constructor(private readonly options: WitnessPublisherOptions) {}

  /** A checkpoint committed: publish it to every witness (returns at once). */
  notify(): void {
    if (this.stopped) return;
    for (const witness of this.options.witnesses()) void this.run(witness.name);
  }

  /** Publishes to every witness now and waits for each lane to settle (the `executor witness publish` command). */
  async publishAll(): Promise<PublishResult[]> {
    const witnesses = this.options.witnesses();
    await Promise.all(witnesses.map((witness) => this.run(witness.name)));
    return witnesses.map((witness) => this.lane(witness.name).last ?? { witness: witness.name, kind: 'nothing_to_publish' as const });
  }

  /** The last result per witness, for `witness list`. */
  lastResults(): PublishResult[] {
    return [...this.lanes.values()].flatMap((lane) => (lane.last ? [lane.last] : []));
  }

  stop(): void {
    this.stopped = true;
    for (const lane of this.lanes.values()) if (lane.retry) clearTimeout(lane.retry);
  }

  private lane(name: string): Lane {
    let lane = this.lanes.get(name);
    if (!lane) this.lanes.set(name, (lane = { running: undefined, again: false, failures: 0, retry: undefined, last: undefined }));
    return lane;
  }

  /** Runs the witness's lane; when it is already running, asks it for one more pass and waits for that. */
  private run(name: string): Promise<void> {
    const lane = this.lane(name);
    if (lane.running) {
      lane.again = true;
      return lane.running;
    }
    if (lane.retry) {
      clearTimeout(lane.retry);
      lane.retry = undefined;
    }
    lane.running = (async () => {
      try {
        do {
          lane.again = false;
          const witness = this.options.witnesses().find((candidate) => candidate.name === name);
          if (!witness || this.stopped) return;
          const result = await this.publishOnce(witness);
          lane.last = result;
          if (result.kind === 'unreachable') {
            lane.failures += 1;
            const delay = Math.min(this.options.maxBackoffMs ?? 5 * 60_000, (this.options.backoffMs ?? 1000) * 2 ** (lane.failures - 1));
            if (!this.stopped && !lane.again) {
              lane.retry = setTimeout(() => void this.run(name), delay);
              lane.retry.unref();
            }
          } else lane.failures = 0;
        } while (lane.again && !this.stopped);
      } finally {
        lane.running = undefined;
      }
    })();
    return lane.running;
  }

  /** One publish to one witness; every failure becomes a result, never a throw. */
  private async publishOnce(witness: WitnessConfig): Promise<PublishResult> {
    let result: PublishResult;
    try {
      const log = this.options.log();
      if (!log) result = { witness: witness.name, kind: 'nothing_to_publish' };
      else if (witness.kind === 'http') result = await publishToHttpWitness(witness, log, this.options.store);
      else result = await publishToGitWitness(this.options.dataDir, witness, log, this.options.store, this.options.now ?? Date.now);
    } catch (error) {
      result = { witness: witness.name, kind: 'unreachable', message: (error as Error).message };
    }
    try {
      this.options.onResult?.(result);
    } catch {
      /* a listener's failure is not the witness's */
    }
    return result;
  }
}
