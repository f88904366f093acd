import { maxRisk, riskRank, type Evaluation, type Risk } from '../domain/risk.js';
import type { CommandRunPreview, FileChangePreview } from '../domain/step-record.js';
import type { CommandEffectKind, Policy } from './policy-file.js';
import { permissionBitsInWords } from '../fs/file-modes.js';
import path from 'node:path';
import { hostCodeFindingAt, matchHostCodePath } from './host-code-paths.js';
import { PlannedTree, type TreeAfter } from './tree-after.js';
import { filesystemIgnoresCase } from './path-patterns.js';
import { matchingSecretGlob } from './secret-paths.js';
import { gitChangeSummary } from './git-change-summary.js';

/** One kind of effect a changeset has, with the files that have it and what it does, in words. */
export interface EffectFinding {
  kind: CommandEffectKind;
  /** Root-relative paths, as the preview shows them. */
  paths: string[];
  /** Lower-case, to be put in a sentence: "it deletes victim.txt". */
  says: string;
}

/** What a command's changeset does, weighed by `commands.effects`. */
export interface EffectRating {
  findings: EffectFinding[];
  /** Findings whose kind `commands.effects.deny` names: the changeset is never applied. */
  denied: EffectFinding[];
  /** Findings whose kind `commands.effects.ask` names: the step always goes to the person. */
  asked: EffectFinding[];
  /** Entries that would land outside the roots, in the data directory or on a secret path: never applied, whatever the policy. */
  refused: { path: string; reason: string }[];
  /** The highest risk of the effects; CRITICAL when something is denied or refused. */
  risk: Risk;
  /** Why the step is denied, in words (empty when it is not). */
  denialReasons: string[];
  /** Everything worth saying to the person: the denial, what the policy asks about, and every HIGH effect. */
  reasons: string[];
}

/** How risky each effect is on its own, before the policy's lists; a command is HIGH anyway, these name why. */
const INHERENT_RISK: Record<CommandEffectKind, Risk> = {
  delete: 'MEDIUM',
  replace: 'MEDIUM',
  create: 'LOW',
  modify: 'LOW',
  executable: 'HIGH',
  permission: 'HIGH',
  secret: 'HIGH',
  git: 'HIGH',
  hostCode: 'HIGH',
  size: 'HIGH',
};

/** The kind as the policy sentence names it: "the policy denies deletions". */
const POLICY_WORDS: Record<CommandEffectKind, string> = {
  delete: 'deletions',
  replace: 'replacing the content of existing files',
  create: 'new files',
  modify: 'changes to existing files',
  executable: 'new executables',
  permission: 'permission changes',
  secret: 'changes to secret-looking files',
  git: 'changes inside .git',
  hostCode: 'changes to files this machine runs later',
  size: 'changes this large',
};

const LISTED_PATHS = 5;

function listOf(paths: readonly string[]): string {
  const shown = paths.slice(0, LISTED_PATHS);
  const rest = paths.length - shown.length;
  if (rest > 0) return `${shown.join(', ')} and ${rest} more`;
  return shown.length <= 1 ? (shown[0] ?? '') : `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}`;
}

function octal(mode: number | null | undefined): string {
  return mode === null || mode === undefined ? '-' : `0${mode.toString(8).padStart(3, '0')}`;
}

const isExecutable = (mode: number | null | undefined) => mode !== null && mode !== undefined && (mode & 0o111) !== 0;

/** `.git` as a path segment at any depth (a submodule's too), without case: on macOS and Windows `.GIT` is the same directory. */
function insideGitDir(relativePath: string): boolean {
  return relativePath.split(/[\\/]/).some((segment) => segment.toLowerCase() === '.git');
}

/** A loose object or pack git wrote into a repository's object store, readable by its owner. */
function isGitObject(file: FileChangePreview): boolean {
  return (
    /(^|\/)\.git\/(modules\/.+\/)?objects\//i.test(file.path) &&
    file.modeAfter !== undefined &&
    file.modeAfter !== null &&
    (file.modeAfter & 0o400) !== 0
  );
}

/** The person's own read and write bits: a file without them can no longer be read, backed up or edited by them. */
const OWNER_READ_WRITE = 0o600;

function contentKept(file: FileChangePreview): string {
  if (file.binary) return 'binary: what remains of it cannot be shown';
  if (file.keptPercent === undefined || file.keptPercent === 0) return 'none of its old lines remain';
  return `${file.keptPercent}% of its old content remains`;
}

/** A dropped special bit (set-uid, set-gid, sticky) is asked for permission the workspace never gets. */
const DROPPED_BIT = /^(set-uid|set-gid|sticky) bit dropped/;

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * Where a changeset lands: the real workspace root its paths are relative to, and the tree the rest of
 * its plan leaves (tree-after.ts; the disk when absent). With it, the changeset is judged on the tree
 * it leaves: files that make a folder a git directory, or land in one, are `git` effects.
 */
export interface ChangesetPlace {
  root: string;
  tree?: TreeAfter;
}

/** The effects of a changeset, kind by kind; each kind appears once, with all its files. */
export function effectsOf(
  changeset: Pick<CommandRunPreview, 'files' | 'skipped'>,
  policy: Policy,
  place?: ChangesetPlace,
): EffectFinding[] {
  const { files } = changeset;
  const findings: EffectFinding[] = [];
  const add = (kind: CommandEffectKind, paths: string[], says: (list: string) => string) => {
    if (paths.length > 0) findings.push({ kind, paths, says: says(listOf(paths)) });
  };
  const pathsWhere = (test: (file: FileChangePreview) => boolean) => files.filter(test).map((file) => file.path);

  // Deleting a file's content is deleting, whether or not its name stays: emptied (0 bytes, or nothing
  // but white space left of what it held) is `delete`; replaced by other content for the most part is `replace`.
  const removed = pathsWhere((f) => f.existedBefore && !f.existsAfter);
  const changed = (f: FileChangePreview) => f.existedBefore && f.existsAfter && f.preHash !== f.postHash;
  const emptied = pathsWhere((f) => changed(f) && (f.contentLoss === 'emptied' || (f.sizeBefore > 0 && f.sizeAfter === 0)));
  if (removed.length > 0 || emptied.length > 0) {
    const parts: string[] = [];
    if (removed.length > 0) parts.push(`it deletes ${listOf(removed)}`);
    if (emptied.length > 0) parts.push(`${removed.length > 0 ? '' : 'it '}empties ${listOf(emptied)}`);
    findings.push({ kind: 'delete', paths: [...removed, ...emptied], says: parts.join(', and ') });
  }
  const replaced = files.filter((f) => changed(f) && !emptied.includes(f.path) && f.contentLoss === 'replaced');
  add(
    'replace',
    replaced.map((f) => f.path),
    () => `it replaces the content of ${listOf(replaced.map((f) => `${f.path} (${contentKept(f)})`))}`,
  );
  add(
    'create',
    pathsWhere((f) => !f.existedBefore && f.existsAfter),
    (list) => `it creates ${list}`,
  );
  add(
    'modify',
    pathsWhere((f) => f.existedBefore && f.existsAfter && f.preHash !== f.postHash),
    (list) => `it changes ${list}`,
  );
  add(
    'executable',
    pathsWhere(
      (f) => f.existsAfter && isExecutable(f.modeAfter) && !(f.existedBefore && (f.modeBefore === undefined || isExecutable(f.modeBefore))),
    ),
    (list) => `it makes ${list} executable`,
  );

  const modeChanges = files.filter(
    (f) =>
      f.existedBefore &&
      f.existsAfter &&
      f.modeAfter !== undefined &&
      f.modeBefore !== undefined &&
      f.modeBefore !== null &&
      f.modeBefore !== f.modeAfter,
  );
  const droppedBits = [
    ...files.filter((f) => f.dropped?.some((note) => DROPPED_BIT.test(note))).map((f) => f.path),
    ...changeset.skipped.filter((entry) => DROPPED_BIT.test(entry.reason)).map((entry) => entry.path),
  ];
  // A new file that asked for more than the person's umask gives (`umask 0`, `chmod 666`): created with less, and said.
  const widerThanUmask = files.filter(
    (f) => !f.existedBefore && f.existsAfter && f.modeRequested !== undefined && (f.modeRequested & ~(f.modeAfter ?? 0) & 0o777) !== 0,
  );
  // Taking the person's own read or write away: they can no longer open, back up or edit their file.
  // Git writes its objects read-only (0444) by design; those are the `git` effect's, not a lock-out.
  const ownerLocked = files.filter(
    (f) =>
      f.existsAfter &&
      !isGitObject(f) &&
      f.modeAfter !== undefined &&
      f.modeAfter !== null &&
      (f.modeAfter & OWNER_READ_WRITE) !== OWNER_READ_WRITE &&
      (!f.existedBefore || (f.modeBefore !== undefined && f.modeBefore !== null && (f.modeBefore & OWNER_READ_WRITE & ~f.modeAfter) !== 0)),
  );
  if (modeChanges.length > 0 || droppedBits.length > 0 || widerThanUmask.length > 0 || ownerLocked.length > 0) {
    const parts: string[] = [];
    if (modeChanges.length > 0)
      parts.push(
        `it changes the permissions of ${listOf(modeChanges.map((f) => `${f.path} (${octal(f.modeBefore)} → ${octal(f.modeAfter)})`))}`,
      );
    if (droppedBits.length > 0)
      parts.push(`it asks for set-uid, set-gid or sticky bits on ${listOf(droppedBits)} (dropped: only 0777 bits are applied)`);
    if (widerThanUmask.length > 0) {
      parts.push(
        `it asks for wider permissions than your umask gives new files on ${listOf(widerThanUmask.map((f) => `${f.path} (${octal(f.modeRequested)}, created ${octal(f.modeAfter)})`))}; dropped: ${permissionBitsInWords(widerThanUmask.reduce((bits, f) => bits | (f.modeRequested! & ~(f.modeAfter ?? 0) & 0o777), 0))}`,
      );
    }
    if (ownerLocked.length > 0)
      parts.push(
        `it leaves ${listOf(ownerLocked.map((f) => `${f.path} (${octal(f.modeAfter)})`))} without read or write permission for you`,
      );
    const paths = [...modeChanges, ...widerThanUmask, ...ownerLocked].map((f) => f.path);
    findings.push({ kind: 'permission', paths: [...new Set([...paths, ...droppedBits])], says: parts.join(', and ') });
  }

  const secrets = files.flatMap((f) => {
    const glob = matchingSecretGlob(f.path, policy.secretGlobs);
    return glob ? [`${f.path} (secret pattern "${glob}")`] : [];
  });
  if (secrets.length > 0)
    findings.push({
      kind: 'secret',
      paths: files.filter((f) => matchingSecretGlob(f.path, policy.secretGlobs)).map((f) => f.path),
      says: `it changes ${listOf(secrets)}, which look${secrets.length === 1 ? 's' : ''} like ${secrets.length === 1 ? 'a secret' : 'secrets'}`,
    });
  const caseInsensitive = filesystemIgnoresCase(place?.root);
  // The tree the changeset leaves: its own new files over what the plan leaves. A git directory assembled
  // from files that each look ordinary (vendor/HEAD, vendor/objects/…, vendor/refs/…, vendor/config) is one.
  const after =
    place &&
    new PlannedTree(
      files.filter((f) => f.existsAfter).map((f) => ({ absolutePath: path.join(place.root, ...f.path.split('/')), content: null })),
      caseInsensitive,
      place.tree,
    );
  const gitAfter = new Map<string, string>();
  if (place && after) {
    for (const f of files) {
      // Files named for what they are keep their own finding (below); this is for what only the tree after tells.
      if (insideGitDir(f.path) || matchHostCodePath(f.path, { caseInsensitive })) continue;
      const finding = hostCodeFindingAt(place.root, f.path, { caseInsensitive }, after);
      if (finding?.git) gitAfter.set(f.path, finding.reason);
    }
  }
  // Said as git would say it ("git commit in .git: moves branch main to commit 1a2b3c4"), then the files.
  const gitSummary = gitChangeSummary(files);
  add(
    'git',
    pathsWhere((f) => insideGitDir(f.path)),
    (list) => `${gitSummary ? `${gitSummary}; ` : ''}it changes ${list} inside a .git directory, which git reads and runs hooks from`,
  );
  if (gitAfter.size > 0) {
    const paths = [...gitAfter.keys()];
    const existing = findings.find((finding) => finding.kind === 'git');
    const says = `it leaves ${listOf(paths)} in a git directory (${[...gitAfter.values()][0]!.replace(/\.$/, '')}), which Git obeys when it runs in or under that folder — git status included`;
    if (existing) {
      existing.paths.push(...paths);
      existing.says += `, and ${says}`;
    } else findings.push({ kind: 'git', paths, says });
  }
  // Beyond .git: shell start-up files, build files, editor tasks, hooks… whatever this machine runs or obeys on its own later.
  const hostCode = files.flatMap((f) => {
    if (insideGitDir(f.path) || gitAfter.has(f.path)) return [];
    const match = matchHostCodePath(f.path, { caseInsensitive });
    return match ? [{ path: f.path, shown: `${f.path} (${match.what})` }] : [];
  });
  if (hostCode.length > 0)
    findings.push({
      kind: 'hostCode',
      paths: hostCode.map((entry) => entry.path),
      says: `it changes ${listOf(hostCode.map((entry) => entry.shown))}, which this machine runs or obeys later, outside any sandbox`,
    });

  const { maxFiles, maxBytes } = policy.commands.effects;
  const bytesWritten = files.reduce((sum, f) => sum + (f.existsAfter ? f.sizeAfter : 0), 0);
  const sizes: string[] = [];
  if (maxFiles !== null && files.length > maxFiles)
    sizes.push(`it changes ${files.length} files, more than commands.effects.maxFiles (${maxFiles})`);
  if (maxBytes !== null && bytesWritten > maxBytes)
    sizes.push(`it writes ${bytesWritten} bytes, more than commands.effects.maxBytes (${maxBytes})`);
  if (sizes.length > 0) findings.push({ kind: 'size', paths: files.map((f) => f.path), says: sizes.join(', and ') });
  return findings;
}

/**
 * Rates a command by what its run changed (the changeset of the dry run, or of the real run before
 * it is applied), not by its command line: whatever the line looked like, a denied effect denies it
 * and an `ask` effect sends it to the person.
 */
export function rateChangeset(
  changeset: Pick<CommandRunPreview, 'files' | 'skipped'>,
  policy: Policy,
  place?: ChangesetPlace,
): EffectRating {
  const findings = effectsOf(changeset, policy, place);
  const { deny, ask } = policy.commands.effects;
  const denied = findings.filter((finding) => deny.includes(finding.kind));
  const asked = findings.filter((finding) => !deny.includes(finding.kind) && ask.includes(finding.kind));
  const refused = changeset.skipped.filter((entry) => entry.blocksChangeset).map(({ path, reason }) => ({ path, reason }));

  const denialReasons = [
    ...denied.map(
      (finding) => `${capitalized(finding.says)}, and the policy denies ${POLICY_WORDS[finding.kind]} (commands.effects.deny).`,
    ),
    ...refused.map((entry) => `It writes ${entry.path}, which ${entry.reason}; a changeset that reaches there is never applied.`),
  ];
  const reasons = [
    ...denialReasons,
    ...asked.map(
      (finding) => `${capitalized(finding.says)}, and the policy asks you about ${POLICY_WORDS[finding.kind]} (commands.effects.ask).`,
    ),
    ...findings
      .filter((finding) => !denied.includes(finding) && !asked.includes(finding) && INHERENT_RISK[finding.kind] === 'HIGH')
      .map((finding) => `${capitalized(finding.says)}.`),
  ];
  const risk = denialReasons.length > 0 ? 'CRITICAL' : maxRisk(...findings.map((finding) => INHERENT_RISK[finding.kind]));
  return { findings, denied, asked, refused, risk, denialReasons, reasons };
}

/** Mitigation lines that say a step went through without asking (src/policy/evaluate-step.ts words them). */
const APPROVED_WITHOUT_ASKING = 'Approved without asking';

/**
 * The step's evaluation from its command line, weighed again with what its run changes: a denied or
 * refused effect denies it; an `ask` effect, or effects riskier than the line alone, take away an
 * approval the policy (autoApprove, a remembered rule) would have given without asking.
 */
export function weighEffects(evaluation: Evaluation, rating: EffectRating): Evaluation {
  if (!evaluation.allowed) return evaluation;
  const reasons = [...evaluation.reasons, ...rating.reasons];
  if (rating.denialReasons.length > 0) return { ...evaluation, allowed: false, risk: 'CRITICAL', consent: 'deny', reasons };
  const risk = maxRisk(evaluation.risk, rating.risk);
  const mustAsk = rating.asked.length > 0 || riskRank(risk) > riskRank(evaluation.risk);
  if (evaluation.consent === 'none' && mustAsk) {
    // The rules that would have approved it did not: they must not be counted or recorded as applied.
    const { approvedByRules: _notApplied, ...asked } = evaluation;
    return {
      ...asked,
      risk,
      consent: 'confirm',
      reasons: [...reasons, 'The policy would have approved the command line without asking, but what it changes needs your consent.'],
      mitigations: evaluation.mitigations.filter((mitigation) => !mitigation.startsWith(APPROVED_WITHOUT_ASKING)),
    };
  }
  return { ...evaluation, risk, reasons };
}
