import type { Db } from '../../store/database.js';
import type { WitnessConfig } from '../../policy/policy-file.js';

/**
 * The witnesses the log's own signed records ever named. Each policy record (`policy.changed`, and
 * `policy.edited_outside` for a policy.json edited behind the host's back) carries the whole policy
 * before and after, witnesses included (URL and cosigner vkey, or git remote and branch). Verify asks
 * every witness named here, not only those in today's policy.json: a rollback must not hide by
 * removing the witness that would show it.
 */

/** The records that change the policy, in the order they were written. */
export const POLICY_RECORD_KINDS = ['policy.changed', 'policy.edited_outside'] as const;

export interface PolicyRecordRef {
  seq: number;
  ts: string;
  /** Who made the change, as the record names them: channel/user. */
  by: string;
  action: string;
}

export interface NamedWitness {
  config: WitnessConfig;
  /** The record that last added it (null when only a policy.json edit the log never recorded named it). */
  added: PolicyRecordRef | null;
  /** The record that last removed it, when the log's newest policy no longer names it. */
  removed: PolicyRecordRef | null;
}

/** One witness, whatever it is called: a name can be reused for another URL or key, which is another witness. */
export function witnessIdentity(witness: WitnessConfig): string {
  return witness.kind === 'http' ? `http ${witness.url} ${witness.vkey}` : `git ${witness.remote}#${witness.branch}`;
}

function witnessesIn(policy: unknown): WitnessConfig[] {
  const list = (policy as { witnesses?: unknown } | null | undefined)?.witnesses;
  if (!Array.isArray(list)) return [];
  return list.filter((item): item is WitnessConfig => {
    const witness = item as Partial<Record<string, unknown>> | null;
    if (!witness || typeof witness.name !== 'string') return false;
    if (witness.kind === 'http') return typeof witness.url === 'string' && typeof witness.vkey === 'string';
    return witness.kind === 'git' && typeof witness.remote === 'string' && typeof witness.branch === 'string';
  });
}

/** Every witness the policy records among these record bodies name (before or after), each once: what an export's records name. */
export function witnessesInPolicyBodies(bodies: readonly string[]): WitnessConfig[] {
  const named = new Map<string, WitnessConfig>();
  for (const text of bodies) {
    let body: { action?: unknown; args?: { before?: unknown; after?: unknown } };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      continue;
    }
    if (!(POLICY_RECORD_KINDS as readonly unknown[]).includes(body.action)) continue;
    for (const witness of [...witnessesIn(body.args?.before), ...witnessesIn(body.args?.after)])
      if (!named.has(witnessIdentity(witness))) named.set(witnessIdentity(witness), witness);
  }
  return [...named.values()];
}

interface PolicyRow {
  seq: number;
  ts: string;
  action: string;
  body: string;
}

/** Every policy record, oldest first (the action index makes this a short read on any log). */
function policyRows(db: Db): PolicyRow[] {
  return db
    .prepare(
      `SELECT seq, ts, action, body FROM audit_records WHERE action IN (${POLICY_RECORD_KINDS.map(() => '?').join(', ')}) ORDER BY seq`,
    )
    .all(...POLICY_RECORD_KINDS) as PolicyRow[];
}

function byOf(body: { userId?: { channel?: unknown; user?: unknown } }): string {
  const channel = typeof body.userId?.channel === 'string' ? body.userId.channel : '?';
  const user = typeof body.userId?.user === 'string' ? body.userId.user : '?';
  return `${channel}/${user}`;
}

/**
 * Walks the policy records: a witness is added by the record whose `after` names it and `before`
 * does not, removed by the reverse. Returns every witness ever named, in the order first named.
 */
export function witnessesNamedByLog(db: Db): NamedWitness[] {
  const named = new Map<string, NamedWitness>();
  for (const row of policyRows(db)) {
    let body: { args?: { before?: unknown; after?: unknown }; userId?: { channel?: unknown; user?: unknown } };
    try {
      body = JSON.parse(row.body) as typeof body;
    } catch {
      // verify itself reports a body that is not JSON; here it names no witness.
      continue;
    }
    const ref: PolicyRecordRef = { seq: row.seq, ts: row.ts, by: byOf(body), action: row.action };
    const before = new Map(witnessesIn(body.args?.before).map((witness) => [witnessIdentity(witness), witness]));
    const after = new Map(witnessesIn(body.args?.after).map((witness) => [witnessIdentity(witness), witness]));
    for (const [identity, witness] of after) {
      const known = named.get(identity);
      if (!known) named.set(identity, { config: witness, added: ref, removed: null });
      else if (!before.has(identity) || known.removed) named.set(identity, { config: witness, added: ref, removed: null });
    }
    for (const [identity, witness] of before) {
      if (after.has(identity)) continue;
      const known = named.get(identity);
      named.set(identity, { config: known?.config ?? witness, added: known?.added ?? null, removed: ref });
    }
  }
  return [...named.values()];
}

/** The `policySha256` of the newest policy record, and the witnesses its `after` names (undefined when none was ever recorded). */
export function lastRecordedPolicy(db: Db): { policySha256: string | null; witnesses: WitnessConfig[] } | undefined {
  const row = db
    .prepare(`SELECT body FROM audit_records WHERE action IN (${POLICY_RECORD_KINDS.map(() => '?').join(', ')}) ORDER BY seq DESC LIMIT 1`)
    .get(...POLICY_RECORD_KINDS) as { body: string } | undefined;
  if (!row) return undefined;
  try {
    const body = JSON.parse(row.body) as { args?: { after?: unknown; policySha256?: unknown } };
    return {
      policySha256: typeof body.args?.policySha256 === 'string' ? body.args.policySha256 : null,
      witnesses: witnessesIn(body.args?.after),
    };
  } catch {
    return { policySha256: null, witnesses: [] };
  }
}
