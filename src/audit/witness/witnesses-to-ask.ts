import { ExecutorError } from '../../domain/errors.js';
import { WitnessConfigSchema, type WitnessConfig } from '../../policy/policy-file.js';
import { NOTE_COSIGNATURE_V1, SignedNoteError, parseVerifierKey } from '../format/signed-note.js';
import { witnessIdentity, type NamedWitness } from './named-witnesses.js';
import type { AskedWitness } from './witness-check.js';

/**
 * Which witnesses `audit verify` asks: today's policy, every witness the log's signed policy records
 * ever named (a removal by `witness remove` or by editing policy.json must not hide a rollback), and
 * the ones the auditor names on the command line. Each witness once, by URL and key (or remote and
 * branch), whatever it is called.
 */

const VKEY = /^[^\s+]+\+[0-9a-fA-F]{8}\+[A-Za-z0-9+/]+=*$/;

/** `--witness URL=VKEY`: split at the first '=' whose rest reads as a vkey (a URL may hold '=' in its query, a vkey ends in '='). */
export function parseAuditorWitness(option: string, index: number): WitnessConfig {
  let at = option.indexOf('=');
  while (at > 0 && !VKEY.test(option.slice(at + 1))) at = option.indexOf('=', at + 1);
  if (at <= 0)
    throw new ExecutorError(
      'INVALID_INPUT',
      `--witness ${option}: give URL=VKEY, the witness's URL and its cosigner vkey (name+8 hex digits+base64, as \`executor witness key\` prints it).`,
    );
  const url = option.slice(0, at);
  const vkey = option.slice(at + 1);
  let name: string;
  try {
    const verifier = parseVerifierKey(vkey);
    if (verifier.type !== NOTE_COSIGNATURE_V1)
      throw new ExecutorError(
        'INVALID_INPUT',
        `--witness ${option}: a witness cosigns with a cosignature/v1 key (type 0x04); this vkey is a plain note key. Ask the witness for its cosigner vkey.`,
      );
    name = verifier.name;
  } catch (error) {
    if (error instanceof SignedNoteError)
      throw new ExecutorError('INVALID_INPUT', `--witness ${option}: ${vkey} is not a witness key: ${error.message}`);
    throw error;
  }
  const parsed = WitnessConfigSchema.safeParse({
    kind: 'http',
    name: /^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$/.test(name) && !name.split('/').includes('..') ? name : `auditor-${index + 1}`,
    url,
    vkey,
  });
  if (!parsed.success)
    throw new ExecutorError('INVALID_INPUT', `--witness ${option}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}.`);
  return parsed.data;
}

/** `--git-witness REMOTE[#BRANCH]` (branch executor-audit when not given, as `witness add-git`). */
export function parseAuditorGitWitness(option: string, index: number): WitnessConfig {
  const hash = option.lastIndexOf('#');
  const [remote, branch] = hash > 0 ? [option.slice(0, hash), option.slice(hash + 1)] : [option, 'executor-audit'];
  const parsed = WitnessConfigSchema.safeParse({ kind: 'git', name: `auditor-git-${index + 1}`, remote, branch });
  if (!parsed.success)
    throw new ExecutorError(
      'INVALID_INPUT',
      `--git-witness ${option}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}. Give REMOTE or REMOTE#BRANCH.`,
    );
  return parsed.data;
}

export function witnessesToAsk(
  current: readonly WitnessConfig[],
  named: readonly NamedWitness[],
  auditor: readonly WitnessConfig[],
): AskedWitness[] {
  const asked: AskedWitness[] = [];
  const seen = new Set<string>();
  const names = new Set<string>();
  const add = (witness: AskedWitness) => {
    const identity = witnessIdentity(witness.config);
    if (seen.has(identity)) return;
    seen.add(identity);
    // Two witnesses may share a name (one removed, another added under it): reports and git clones keep them apart.
    let name = witness.config.name;
    for (let n = 2; names.has(name); n += 1)
      name = `${witness.config.name}.${witness.source === 'log' ? 'removed' : witness.source}${n > 2 ? n - 1 : ''}`;
    names.add(name);
    asked.push({ ...witness, config: { ...witness.config, name } });
  };
  for (const config of current) add({ config, source: 'policy' });
  for (const witness of named) add({ config: witness.config, source: 'log', removed: witness.removed });
  for (const config of auditor) add({ config, source: 'auditor' });
  return asked;
}
