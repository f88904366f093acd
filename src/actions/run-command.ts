import fs from 'node:fs';
import path from 'node:path';
import { applyFileChangesOffThread, limitNewFileMode, readCurrent, type FileChange } from '../backup/file-changes.js';
import { syncDirectories } from '../fs/atomic-write.js';
import { previewFileChangesOffLoop } from '../backup/preview-workers.js';
import type { DirectoryLedger } from '../fs/created-directories.js';
import { sha256Of } from '../backup/blob-store.js';
import { ExecutorError } from '../domain/errors.js';
import { commandReachesBeyondRules } from '../domain/remembered-rule.js';
import { commandTimeoutMs } from '../domain/run-step-facts.js';
import { commandLineOf } from '../domain/shell-quote.js';
import type { CommandRunPreview, Preview } from '../domain/step-record.js';
import type { ActionArgs } from '../domain/step.js';
import { wellFormed } from '../domain/json-limits.js';
import { analyseCommand, checkCommandPrograms, describeUnknowable } from '../policy/command-policy.js';
import { ALWAYS_ASK_KINDS } from '../policy/shell-findings.js';
import type { RuleTarget } from '../policy/remembered-rules.js';
import { assertChangesetTargets, checkChangesetTarget, type ChangesetScope } from '../policy/changeset-targets.js';
import { rateChangeset } from '../policy/command-effects.js';
import { askedDeclaredEffects, insideGitDirectory, type DeclaredEffect } from '../policy/declared-effects.js';
import { matchHostCodePath } from '../policy/host-code-paths.js';
import { filesystemIgnoresCase } from '../policy/path-patterns.js';
import { guardPath, resolveThroughSymlinks } from '../policy/path-guard.js';
import type { Policy } from '../policy/policy-file.js';
import {
  defaultDockerClient,
  imageForRun,
  runSandboxed,
  scratchOptionsFor,
  type SandboxRunOutcome,
} from '../sandbox/docker/sandbox-run.js';
import { consentedBuildDigestOf } from '../sandbox/docker/project-image.js';
import type { OverlayWrite } from '../sandbox/docker/scratch-copy.js';
import { APPLIED_DRY_RUN, bindDryRun, ranAgain, reusableDryRun, type CommandInputs } from './command-dry-run.js';
import type { ActionContext, ActionModule, ReadyRun } from './action-module.js';

type Args = ActionArgs<'runCommand'>;

/** How much of each output stream the step's result (and so its audit record) keeps; the preview keeps the policy's full cap. */
const RESULT_OUTPUT_EXCERPT = 4096;

/** The command line as the person reads it everywhere: argv quoted as a shell would need it (src/domain/shell-quote.ts). */
export function commandText(args: Args): string {
  return commandLineOf(args);
}

function argvOf(args: Args): string[] {
  return args.argv ?? ['/bin/sh', '-c', args.command!];
}

/** A step may ask for less time than the policy allows, never more. */
function timeoutOf(args: Args, policy: Policy): number {
  return commandTimeoutMs(args, policy);
}

/** The real directory the command works on: the step's cwd (inside a root) or the first workspace root. */
function sourceDirOf(args: Args, ctx: ActionContext): { sourceDir: string; root: string } {
  const roots = ctx.policy.workspaceRoots;
  if (roots.length === 0) {
    throw new ExecutorError(
      'PATH_OUTSIDE_ROOT',
      'No workspace root is configured, so no command can run. Add one to "workspaceRoots" in policy.json.',
    );
  }
  const realRoots = roots.map((root) => fs.realpathSync.native(root));
  if (!args.cwd) return { sourceDir: realRoots[0]!, root: realRoots[0]! };
  const requested = path.isAbsolute(args.cwd) ? args.cwd : path.resolve(realRoots[0]!, args.cwd);
  let real: string;
  try {
    real = fs.realpathSync.native(requested);
  } catch {
    throw new ExecutorError('PATH_INVALID', `The working directory ${args.cwd} does not exist.`, { cwd: args.cwd });
  }
  const root = realRoots.find((candidate) => real === candidate);
  if (root) return { sourceDir: real, root };
  const verdict = guardPath(args.cwd, roots, ctx.dataDir);
  if (!verdict.ok) throw new ExecutorError(verdict.code, verdict.reason, { cwd: args.cwd });
  if (!fs.statSync(verdict.realPath).isDirectory())
    throw new ExecutorError('PATH_INVALID', `The working directory ${args.cwd} is not a directory.`, { cwd: args.cwd });
  return { sourceDir: verdict.realPath, root: verdict.root };
}

/**
 * What `allowSecrets` declares before the command runs: it sees those files and may change them, so
 * each is a `secret` effect (and a `git` or `hostCode` one where it lies), asked about like the same
 * effect in a changeset.
 */
function allowedSecretEffects(args: Args, sourceDir: string, root: string): DeclaredEffect[] {
  if (!args.allowSecrets?.length) return [];
  const caseInsensitive = filesystemIgnoresCase(root);
  const fromRoot = args.allowSecrets.map((relative) => path.relative(root, path.resolve(sourceDir, relative)).split(path.sep).join('/'));
  const effects: DeclaredEffect[] = [
    { kind: 'secret', says: `It lets the command read and change secret-looking files (${fromRoot.join(', ')})` },
  ];
  const inGit = fromRoot.filter((relative) => insideGitDirectory(relative));
  if (inGit.length > 0) effects.push({ kind: 'git', says: `It lets the command change ${inGit.join(', ')}, inside a .git directory` });
  const hostCode = fromRoot.filter((relative) => !insideGitDirectory(relative) && matchHostCodePath(relative, { caseInsensitive }));
  if (hostCode.length > 0)
    effects.push({ kind: 'hostCode', says: `It lets the command change ${hostCode.join(', ')}, which this machine runs or obeys later` });
  return effects;
}

/**
 * The network a run gets. A dry run that may read secrets (allowSecrets) runs before anyone
 * consented: it gets none, so nothing it read can leave before the person decides. The real run
 * gets what the step asked for; if that changes what it does, it comes back to the person as drift.
 */
function networkFor(args: Args, phase: 'dryRun' | 'realRun'): 'none' | 'allowlist' {
  if (phase === 'dryRun' && (args.allowSecrets?.length ?? 0) > 0) return 'none';
  return args.network ?? 'none';
}

/** Where a changeset may land: the step's roots and secrets, never the data directory. */
function changesetScope(args: Args, ctx: ActionContext, sourceDir: string): ChangesetScope {
  const allowedSecretPaths = (args.allowSecrets ?? []).map((relative) =>
    resolveThroughSymlinks(path.join(sourceDir, ...relative.split('/'))),
  );
  return { policy: ctx.policy, dataDir: ctx.dataDir, allowedSecretPaths };
}

interface RunView {
  preview: CommandRunPreview;
  changes: FileChange[];
  outcome: SandboxRunOutcome;
  scope: ChangesetScope;
}

/**
 * One sandboxed run, turned into file changes of the real workspace. Each path is checked again on
 * the host: a command may create `dir/file` where the real `dir` is a symlink out of the root or onto
 * a secret path. Such an entry is not skipped quietly: it blocks the whole changeset (the effects
 * rating denies the step), since a command that reaches for it is not one to half-apply.
 */
async function runAndView(args: Args, ctx: ActionContext, phase: 'dryRun' | 'realRun', consentedBuildDigest?: string): Promise<RunView> {
  const dryRun = phase === 'dryRun';
  const { sourceDir, root } = sourceDirOf(args, ctx);
  const overlay = dryRun ? overlayWithin(sourceDir, ctx) : undefined;
  const outcome = await runSandboxed(defaultDockerClient(), {
    ...(overlay && overlay.length > 0 ? { overlay } : {}),
    manifest: dryRun,
    sourceDir,
    root,
    ...(consentedBuildDigest ? { consentedBuildDigest } : {}),
    argv: argvOf(args),
    network: networkFor(args, phase),
    policy: ctx.policy,
    env: args.env,
    timeoutMs: timeoutOf(args, ctx.policy),
    allowedSecrets: args.allowSecrets,
    // By real path, never by a glob built from one: a directory named `exec(1)` or `{a,b}` would be read as a pattern.
    excludeDirs: [ctx.dataDir],
    hooks: ctx.run,
  });
  const scope = changesetScope(args, ctx, sourceDir);
  const changes: FileChange[] = [];
  const skipped: CommandRunPreview['skipped'] = outcome.changeset.skipped.map((entry) => ({
    path: path.relative(root, path.join(sourceDir, entry.relativePath)),
    reason: entry.reason,
    ...(entry.blocksChangeset ? { blocksChangeset: true } : {}),
  }));
  const conflicts: string[] = [];
  for (const file of outcome.changeset.files) {
    const absolute = path.join(sourceDir, ...file.relativePath.split('/'));
    const verdict = checkChangesetTarget(absolute, scope);
    if (!verdict.ok) {
      skipped.push({ path: path.relative(root, absolute), reason: verdict.reason, blocksChangeset: true });
      continue;
    }
    if (file.conflict) conflicts.push(verdict.relativePath);
    changes.push(
      limitNewFileMode({
        absolutePath: verdict.realPath,
        displayPath: verdict.relativePath,
        before: file.before,
        after: file.after,
        mode: file.modeBefore,
        modeAfter: file.modeAfter,
        ...(file.dropped ? { dropped: file.dropped } : {}),
      }),
    );
  }
  const { run } = outcome;
  const preview: CommandRunPreview = {
    kind: 'commandRun',
    command: commandText(args),
    cwd: path.relative(root, sourceDir) || '.',
    network: networkFor(args, phase),
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    oomKilled: run.oomKilled,
    stdout: run.stdout,
    stderr: run.stderr,
    files: await previewFileChangesOffLoop(changes),
    skipped,
    conflicts,
    image: outcome.image,
    egress: run.egress.map(({ method, host, port, allowed }) => ({ method, host, port, allowed })),
  };
  if (dryRun) {
    // Kept by content, as a write's content is in its step: a later step's dry run lays them over its copy.
    // A file at a time, the host answering in between: a changeset may be 40 files of 1 MB.
    const stored = new Map<string, string>();
    for (const file of outcome.changeset.files) {
      if (file.after === null) continue;
      stored.set(file.relativePath, ctx.blobs.put(file.after));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const binding = bindDryRun(outcome, inputsOf(args, ctx, sourceDir, outcome.image.digest), ctx.blobs, stored, conflicts.length);
    if (binding) preview.dryRun = binding;
    if (ctx.planOverlay && ctx.planOverlay.basis.length > 0) preview.planBasis = ctx.planOverlay.basis;
  }
  return { preview, changes, outcome, scope };
}

/** The plan's earlier writes that land in the copied directory, relative to it. */
function overlayWithin(sourceDir: string, ctx: ActionContext): OverlayWrite[] {
  const writes: OverlayWrite[] = [];
  for (const write of ctx.planOverlay?.writes ?? []) {
    const relative = path.relative(sourceDir, write.absolutePath);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) continue;
    writes.push({ relativePath: relative.split(path.sep).join('/'), content: write.content });
  }
  return writes;
}

function inputsOf(args: Args, ctx: ActionContext, sourceDir: string, imageDigest: string): CommandInputs {
  return {
    argv: argvOf(args),
    env: args.env,
    sourceDir,
    network: args.network ?? 'none',
    allowSecrets: args.allowSecrets,
    imageDigest,
    timeoutMs: timeoutOf(args, ctx.policy),
    policy: ctx.policy,
  };
}

/**
 * The approved dry run as the real run, when it ran on exactly what a run now would (see
 * command-dry-run.ts): its changeset, applied with the usual checks, and its output. Otherwise why not.
 */
async function approvedDryRun(args: Args, ctx: ActionContext): Promise<{ ready: ReadyRun } | { reason: string }> {
  const approved = ctx.approvedPreview;
  if (!approved || approved.kind !== 'commandRun') return { reason: 'no dry run of it was approved' };
  const { sourceDir, root } = sourceDirOf(args, ctx);
  // The image this root's commands run in now (a project image's tag is its content digest): a changed
  // Dockerfile or rebuilt default image means the dry run ran on something else. Never built here by running code.
  let image;
  try {
    image = await imageForRun(defaultDockerClient(), { sourceDir, root, policy: ctx.policy });
  } catch (error) {
    return { reason: `its image could not be checked (${(error as Error).message})` };
  }
  const scope = changesetScope(args, ctx, sourceDir);
  const options = scratchOptionsFor(ctx.policy, args.allowSecrets, [ctx.dataDir], root, defaultDockerClient().local);
  const reusable = await reusableDryRun(approved, inputsOf(args, ctx, sourceDir, image.digest), ctx.blobs, options, scope);
  if ('reason' in reusable) return reusable;
  const { changes } = reusable;
  const binding = approved.dryRun!;
  return {
    ready: {
      fileChanges: changes,
      preview: approved,
      async apply() {
        assertChangesetTargets(changes, scope);
        await applyUnlessChanged(changes, ctx.directoryLedger);
        return {
          exitCode: approved.exitCode,
          timedOut: approved.timedOut,
          oomKilled: approved.oomKilled,
          image: approved.image,
          runId: binding.runId,
          durationMs: binding.durationMs,
          files: fileList(changes),
          stdout: excerpt(approved.stdout),
          stderr: excerpt(approved.stderr),
          egress: [],
          execution: APPLIED_DRY_RUN,
        };
      },
    },
  };
}

function fileList(changes: readonly FileChange[]): { path: string; change: 'added' | 'deleted' | 'modified' }[] {
  return changes.map((change) => ({
    path: change.displayPath,
    change: change.before === null ? 'added' : change.after === null ? 'deleted' : 'modified',
  }));
}

/** What must match between the approved preview and the real run: the files and how the command ended. */
function differences(approved: CommandRunPreview, fresh: CommandRunPreview): { changedUnderneath: string[]; differentEffect: string[] } {
  const changedUnderneath: string[] = [];
  const differentEffect: string[] = [];
  const approvedFiles = new Map(approved.files.map((file) => [file.path, file]));
  const freshFiles = new Map(fresh.files.map((file) => [file.path, file]));
  for (const [filePath, file] of freshFiles) {
    const before = approvedFiles.get(filePath);
    if (!before) differentEffect.push(`${filePath} is changed now but was not in the preview`);
    else if (before.preHash !== file.preHash) changedUnderneath.push(filePath);
    else if (before.postHash !== file.postHash || (before.modeAfter ?? null) !== (file.modeAfter ?? null))
      differentEffect.push(`${filePath} gets different content`);
  }
  for (const filePath of approvedFiles.keys())
    if (!freshFiles.has(filePath)) differentEffect.push(`${filePath} was in the preview but is not changed now`);
  if (approved.exitCode !== fresh.exitCode || approved.timedOut !== fresh.timedOut) {
    differentEffect.push(
      `it ended differently (${approved.timedOut ? 'timeout' : `exit ${approved.exitCode}`} in the preview, ${fresh.timedOut ? 'timeout' : `exit ${fresh.exitCode}`} now)`,
    );
  }
  return { changedUnderneath, differentEffect };
}

function driftOf(approved: Preview | null | undefined, fresh: CommandRunPreview): ReadyRun['drift'] {
  if (fresh.conflicts.length > 0) {
    return {
      preview: fresh,
      reason: `${fresh.conflicts.join(', ')} changed in the workspace while the command ran on a copy of it; nothing was overwritten. Look at the new preview.`,
      detail: { conflicts: fresh.conflicts },
    };
  }
  if (!approved || approved.kind !== 'commandRun') {
    return { preview: fresh, reason: 'No preview of what this command changes was approved; look at this one before it is applied.' };
  }
  const { changedUnderneath, differentEffect } = differences(approved, fresh);
  if (changedUnderneath.length > 0) {
    return {
      preview: fresh,
      reason: `${changedUnderneath.join(', ')} changed in the workspace since the preview; nothing was overwritten. Look at the new preview.`,
      detail: { conflicts: changedUnderneath },
    };
  }
  if (differentEffect.length > 0) {
    return {
      preview: fresh,
      reason: `The command did something different this time: ${differentEffect.join('; ')}. Nothing was applied; look at the new preview.`,
      detail: { differences: differentEffect },
    };
  }
  return undefined;
}

function excerpt(stream: { text: string; bytes: number; truncated: boolean }): { text: string; bytes: number; truncated: boolean } {
  const text = stream.text.length > RESULT_OUTPUT_EXCERPT ? stream.text.slice(0, RESULT_OUTPUT_EXCERPT) : stream.text;
  return { text, bytes: stream.bytes, truncated: stream.truncated || text.length < stream.text.length };
}

/**
 * Writes the changeset only if every real file still holds what the run saw; otherwise nothing at all.
 * As a file step's write: every new content goes to a temporary sibling written and fsynced off the
 * host's thread, then one short synchronous stretch checks the files again (the run's view, by content)
 * and renames; the folders' fsyncs go off the thread too, and the outcome waits for them.
 */
async function applyUnlessChanged(changes: FileChange[], ledger?: DirectoryLedger): Promise<void> {
  const syncLater = new Set<string>();
  try {
    await applyFileChangesOffThread(changes, ledger, { syncLater, beforePlacing: () => assertAsTheRunSaw(changes) });
  } catch (error) {
    throw namingTheChangeset(error, changes);
  }
  await syncDirectories(syncLater);
}

/**
 * A content that did not fit (or could not be written) before any file was put in place: the error names
 * the one file, and says so of that file only. The whole changeset is unchanged, which is what an agent
 * deciding whether to retry needs to hear, with the file that failed, as a failure half-way through says it.
 */
function namingTheChangeset(error: unknown, changes: FileChange[]): unknown {
  if (!(error instanceof ExecutorError) || error.details?.putBack !== undefined || typeof error.details?.path !== 'string') return error;
  const failed = changes.find((change) => change.absolutePath === error.details!.path);
  if (!failed || changes.length < 2) return error;
  return new ExecutorError(error.code, `${error.message} None of the command's ${changes.length} file changes was written.`, {
    ...error.details,
    failedPath: failed.displayPath,
    putBack: [],
  });
}

function assertAsTheRunSaw(changes: FileChange[]): void {
  const changed = changes.filter((change) => {
    const current = readCurrent(change.absolutePath).content;
    return (current === null ? null : sha256Of(current)) !== (change.before === null ? null : sha256Of(change.before));
  });
  if (changed.length > 0) {
    throw new ExecutorError(
      'WORKSPACE_CONFLICT',
      `${changed.map((c) => c.displayPath).join(', ')} changed in the workspace just before the command's changes were applied; nothing was written.`,
      {
        paths: changed.map((c) => c.displayPath),
      },
    );
  }
}

/**
 * What a remembered command rule must cover: every simple command of the line (pipelines, lists
 * and nested `$(…)` alike, as the shell analysis reads them) and the working directory. A line
 * whose programs cannot all be named (a wrapper, `sh -c`, a variable in command position, a line
 * that does not parse) gets no target, so no rule can wave it through; nor does a line that writes
 * a file by redirection (anything but /dev/null), nor a command that sets environment variables,
 * asks for the network or sees secrets (commandReachesBeyondRules).
 */
export function commandRuleTarget(args: ActionArgs<'runCommand'>, roots: readonly string[]): RuleTarget | null {
  if (roots.length === 0 || commandReachesBeyondRules(args) !== null) return null;
  const cwd = args.cwd ? (path.isAbsolute(args.cwd) ? args.cwd : path.resolve(roots[0]!, args.cwd)) : roots[0]!;
  const analysis = analyseCommand(args.command ?? args.argv!, args.env);
  if (analysis.unknowable.length > 0 || analysis.commands.length === 0 || analysis.commands.some((words) => words.length === 0))
    return null;
  // A rule for `ls` is about running ls, not about `ls > victim.txt` overwriting a file.
  if (analysis.redirectWrites.some((target) => target !== '/dev/null')) return null;
  return { kind: 'command', pipeline: args.argv ? [args.argv] : analysis.commands, cwd };
}

export const runCommand: ActionModule<'runCommand'> = {
  action: 'runCommand',
  reversible: true,
  previewFromRun: true,
  runsLive: true,
  readsPlanOverlay: true,
  summarize: (args) =>
    `Run \`${commandText(args)}\`${args.cwd ? ` in ${args.cwd}` : ''} in the Docker sandbox${args.network === 'allowlist' ? ' (allowlisted network)' : ''}`,
  ruleTarget: (args, ctx) => commandRuleTarget(args, ctx.policy.workspaceRoots),
  assess(args, ctx) {
    const verdict = checkCommandPrograms(args.command ?? args.argv!, ctx.policy.commands, args.env);
    if (!verdict.allowed) return { risk: 'CRITICAL', deny: true, reasons: [verdict.reason], mitigations: [] };
    const mustAsk: string[] = [];
    if (verdict.unknowable.length > 0) {
      const deny = ctx.policy.commands.deny;
      // A line the parser cannot read, or that the image's shell may read as another command, is never
      // run unseen; any other unknowable line is asked about whenever a deny list is in force.
      if (deny.length > 0)
        mustAsk.push(
          describeUnknowable(
            verdict.unknowable,
            `The policy denies ${deny.map((name) => `"${name}"`).join(', ')}, and the command line cannot show that none of them runs, so you decide.`,
          ),
        );
      else if (verdict.unknowable.some((entry) => ALWAYS_ASK_KINDS.has(entry.kind)))
        mustAsk.push(describeUnknowable(verdict.unknowable, 'Executor never runs such a line without asking you.'));
    }
    let where: string;
    try {
      const { sourceDir, root } = sourceDirOf(args, ctx);
      where = sourceDir === root ? `the workspace root ${root}` : `${path.relative(root, sourceDir)} in ${root}`;
      mustAsk.push(...askedDeclaredEffects(allowedSecretEffects(args, sourceDir, root), ctx.policy));
    } catch (error) {
      return { risk: 'CRITICAL', deny: true, reasons: [(error as Error).message], mitigations: [] };
    }
    const named = [...new Set(verdict.programs)].join(', ') || 'none it can name';
    const reasons = [
      `Runs \`${commandText(args)}\` (programs: ${named}${verdict.unknowable.length > 0 ? ', and it could run others' : ''}) on a copy of ${where}.`,
    ];
    if (verdict.unknowable.length > 0 && mustAsk.length === 0) reasons.push(describeUnknowable(verdict.unknowable));
    if (args.network === 'allowlist') {
      const hosts = ctx.policy.network.allowHosts;
      reasons.push(
        hosts.length
          ? `May reach only ${hosts.join(', ')} over the network, through Executor's audited proxy.`
          : 'Asks for the network, but the policy allows no host: every request will be refused.',
      );
    }
    if (args.allowSecrets?.length) {
      reasons.push(`Lets the command read files that look like secrets: ${args.allowSecrets.join(', ')}.`);
      if (args.network === 'allowlist')
        reasons.push('Its dry run has no network, so nothing it reads can leave before you decide; the network comes with your approval.');
    }
    const limits = ctx.policy.sandbox;
    return {
      risk: 'HIGH',
      reasons,
      ...(mustAsk.length > 0 ? { mustAsk } : {}),
      mitigations: [
        `Runs in a throwaway container: no capabilities, read-only system, non-root, ${args.network === 'allowlist' ? 'no network but the proxy' : 'no network'}, ${limits.memoryMb} MB memory, ${limits.cpus} CPU, ${limits.pids} processes, ${Math.round(timeoutOf(args, ctx.policy) / 1000)} s.`,
        ctx.policy.sandbox.readOnly.length > 0
          ? `Your real workspace is never mounted writable (only ${ctx.policy.sandbox.readOnly.join(', ')} folders are seen read-only; .git/config stays out, replaced by its core settings): the changes come back as diffs you see first, and are applied with exact backups so revert restores every file.`
          : 'Your real workspace is never mounted: the changes come back as diffs you see first, and are applied with exact backups so revert restores every file.',
        'If the real run differs from the preview, nothing is applied and you are asked again.',
      ],
    };
  },
  async simulate(args, ctx) {
    return (await runAndView(args, ctx, 'dryRun')).preview;
  },
  rateEffects(preview, ctx, args) {
    if (preview.kind !== 'commandRun') return null;
    // Judged on the tree it leaves: the root its paths are relative to, and what the rest of its plan writes.
    let root: string | undefined;
    try {
      root = sourceDirOf(args, ctx).root;
    } catch {
      // The working directory is gone: the step is refused when it runs; its changeset is rated by names alone.
    }
    return rateChangeset(preview, ctx.policy, root ? { root, ...(ctx.plannedTree ? { tree: ctx.plannedTree } : {}) } : undefined);
  },
  async run(args, ctx) {
    // What the person saw is what happens: the approved dry run is applied when nothing it ran on has changed.
    const reuse = await approvedDryRun(args, ctx);
    if ('ready' in reuse) return reuse.ready;
    const execution = ranAgain(reuse.reason);
    // No approved preview: the person approved a step whose dry run could not be made, and a dry run
    // that needed the project's image built by running its code says so there. Their approval is the
    // consent to that build; a step approved on a preview never builds by running code unseen.
    // A build that runs the project's code runs only as the build the person was shown (its digest opens the
    // preview error they approved); any other build goes back to them, never runs on that consent.
    const consentedBuild = ctx.approvedPreview ? undefined : consentedBuildDigestOf(ctx.approvedPreviewError);
    const { preview, changes, outcome, scope } = await runAndView(args, ctx, 'realRun', consentedBuild);
    const drift = driftOf(ctx.approvedPreview, preview);
    if (drift) {
      return {
        fileChanges: [],
        preview,
        drift: { ...drift, detail: { ...drift.detail, image: outcome.image.digest, runId: outcome.run.runId, execution } },
        apply: async () => {
          throw new ExecutorError('INTERNAL', 'A drifted run must not be applied.');
        },
      };
    }
    return {
      fileChanges: changes,
      preview,
      async apply() {
        // The executor denies a run with such an entry before this point; kept here so apply can never half-do it.
        const blocked = preview.skipped.find((entry) => entry.blocksChangeset);
        if (blocked)
          throw new ExecutorError('PATH_OUTSIDE_ROOT', `Nothing of the command's changes was applied: ${blocked.path}: ${blocked.reason}`, {
            path: blocked.path,
          });
        // The workspace may have changed since the run: where each entry lands is resolved again now.
        assertChangesetTargets(changes, scope);
        await applyUnlessChanged(changes, ctx.directoryLedger);
        return {
          exitCode: outcome.run.exitCode,
          timedOut: outcome.run.timedOut,
          oomKilled: outcome.run.oomKilled,
          image: outcome.image,
          runId: outcome.run.runId,
          durationMs: outcome.run.durationMs,
          files: fileList(changes),
          stdout: excerpt(outcome.run.stdout),
          stderr: excerpt(outcome.run.stderr),
          egress: outcome.run.egress,
          execution,
        };
      },
    };
  },
  editable: 'command',
  edited(step, command, proposedStep) {
    const stepId = step.id;
    const current = commandLineOf(step.args);
    const before = proposedStep.action === 'runCommand' ? commandLineOf(proposedStep.args) : current;
    if (!wellFormed(command))
      throw new ExecutorError(
        'INVALID_INPUT',
        `The edited command line of step ${stepId} is not valid text (it holds a lone UTF-16 surrogate); nothing was saved.`,
        { stepId },
      );
    const after = command.trim();
    if (after === current.trim() || after === step.args.command)
      throw new ExecutorError(
        'INVALID_INPUT',
        'The edited command line is the same as the proposed one; approve the step as it is instead.',
        { stepId },
      );
    // The person's line runs as they typed it, under `sh -c` in the sandbox, as an agent's `command` does.
    const { argv: _argv, command: _command, ...rest } = step.args;
    return { revised: { ...step, args: { ...rest, command: after } }, change: { commandBefore: before, commandAfter: after } };
  },
};
