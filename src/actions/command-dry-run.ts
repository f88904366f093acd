import path from 'node:path';
import type { BlobStore } from '../backup/blob-store.js';
import { sha256Of } from '../backup/blob-store.js';
import { limitNewFileMode, readCurrent, type FileChange } from '../backup/file-changes.js';
import { canonicalJson, sha256Hex } from '../domain/canonical-json.js';
import type { CommandRunPreview, DryRunBinding, ExecutionChoice } from '../domain/step-record.js';
import { checkChangesetTarget, type ChangesetScope } from '../policy/changeset-targets.js';
import type { Policy } from '../policy/policy-file.js';
import type { SandboxRunOutcome } from '../sandbox/docker/sandbox-run.js';
import type { ScratchOptions } from '../sandbox/docker/scratch-copy.js';
import { manifestDifferences, type WorkspaceManifest } from '../sandbox/docker/workspace-manifest.js';

/**
 * What a command's run depends on besides the files it reads, each as a digest: two runs with the
 * same inputs and the same files, and no network, do the same (up to time and randomness, which the
 * person saw in the preview and approved as they were).
 */
export interface CommandInputs {
  argv: readonly string[];
  env: Record<string, string> | undefined;
  /** The real directory the command works on. */
  sourceDir: string;
  network: 'none' | 'allowlist';
  allowSecrets: readonly string[] | undefined;
  imageDigest: string;
  timeoutMs: number;
  policy: Policy;
}

/** Names the person reads when an input differs ("the image", "the environment"). */
const INPUT_WORDS: Record<string, string> = {
  argv: 'the command line',
  env: 'the environment variables',
  sourceDir: 'the working directory',
  network: 'the network',
  allowSecrets: 'the secrets it may read',
  image: 'the sandbox image',
  timeoutMs: 'the time limit',
  limits: "the sandbox's limits or copy rules",
};

function inputDigests(inputs: CommandInputs): Record<string, string> {
  const { sandbox, secretGlobs } = inputs.policy;
  const values: Record<string, unknown> = {
    argv: inputs.argv,
    env: inputs.env ?? {},
    sourceDir: inputs.sourceDir,
    network: inputs.network,
    allowSecrets: inputs.allowSecrets ?? [],
    image: inputs.imageDigest,
    timeoutMs: inputs.timeoutMs,
    limits: { sandbox, secretGlobs },
  };
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, sha256Hex(canonicalJson(value))]));
}

/** One changed file of the dry run, by content blob: enough to apply it again without the run. */
interface StoredChange {
  relativePath: string;
  preHash: string | null;
  postHash: string | null;
  modeAfter: number | null;
  dropped?: string[];
}

/** The blob a dry run's binding names. */
interface StoredDryRun {
  version: 1;
  inputs: Record<string, string>;
  workspace: WorkspaceManifest;
  changes: StoredChange[];
}

/**
 * Binds a dry run to what it ran on: its inputs, the manifest of the files it read, and its changeset
 * (each new content kept in the blob store by its hash; `storedAfter`: those already put, by path). Only a run that used no network, ended on its
 * own and saw no conflict can be applied later; for any other run there is no binding.
 */
export function bindDryRun(
  outcome: SandboxRunOutcome,
  inputs: CommandInputs,
  blobs: BlobStore,
  storedAfter: ReadonlyMap<string, string>,
  conflicts: number,
): DryRunBinding | undefined {
  const { run, manifest } = outcome;
  if (!manifest || inputs.network !== 'none' || run.egress.length > 0 || run.timedOut || run.oomKilled || run.cancelled || conflicts > 0)
    return undefined;
  const changes: StoredChange[] = outcome.changeset.files.map((file) => ({
    relativePath: file.relativePath,
    preHash: file.before === null ? null : sha256Of(file.before),
    postHash: file.after === null ? null : (storedAfter.get(file.relativePath) ?? blobs.put(file.after)),
    modeAfter: file.modeAfter,
    ...(file.dropped ? { dropped: file.dropped } : {}),
  }));
  const stored: StoredDryRun = { version: 1, inputs: inputDigests(inputs), workspace: manifest, changes };
  const blob = blobs.put(Buffer.from(JSON.stringify(stored)));
  const inputsDigest = sha256Hex(canonicalJson({ inputs: stored.inputs, workspace: manifest.digest }));
  return { inputsDigest, blob, runId: run.runId, durationMs: run.durationMs };
}

/** A dry run ready to apply: its changeset as file changes of the real workspace now. */
export interface ReusableDryRun {
  changes: FileChange[];
}

/**
 * Whether the approved dry run can stand for the real run: same inputs, same files (by content),
 * and every file it changes still holds what it held then. The reason in words when it cannot.
 */
export async function reusableDryRun(
  approved: CommandRunPreview,
  inputs: CommandInputs,
  blobs: BlobStore,
  scratchOptions: ScratchOptions,
  scope: ChangesetScope,
): Promise<ReusableDryRun | { reason: string }> {
  const binding = approved.dryRun;
  if (!binding) return { reason: whyUnbound(approved) };
  if (inputs.network !== 'none') return { reason: 'it may use the network, so a second run may not do the same' };
  if (!blobs.has(binding.blob)) return { reason: "the dry run's record is no longer in the data directory" };
  let stored: StoredDryRun;
  try {
    stored = JSON.parse(blobs.get(binding.blob).toString('utf8')) as StoredDryRun;
  } catch {
    return { reason: "the dry run's record could not be read" };
  }
  const now = inputDigests(inputs);
  const differing = Object.keys(now).filter((name) => now[name] !== stored.inputs[name]);
  if (differing.length > 0) return { reason: `${differing.map((name) => INPUT_WORDS[name] ?? name).join(', ')} changed since the dry run` };
  const changedFiles = await manifestDifferences(inputs.sourceDir, scratchOptions, stored.workspace);
  if (changedFiles.length > 0) return { reason: `files changed since the dry run: ${listed(changedFiles)}` };
  const changes: FileChange[] = [];
  for (const change of stored.changes) {
    const absolute = path.join(inputs.sourceDir, ...change.relativePath.split('/'));
    const verdict = checkChangesetTarget(absolute, scope);
    // The preview's effects rating already refused such a changeset; a run again says so in its own words.
    if (!verdict.ok) return { reason: `${change.relativePath} now leads somewhere a change may not land (${verdict.reason})` };
    if (change.postHash !== null && !blobs.has(change.postHash))
      return { reason: `the dry run's content of ${verdict.relativePath} is gone` };
    // A file at a time, the host answering in between: a changeset may be 40 files of 1 MB.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const current = readCurrent(verdict.realPath);
    const currentHash = current.content === null ? null : sha256Of(current.content);
    if (currentHash !== change.preHash) return { reason: `files changed since the dry run: ${verdict.relativePath}` };
    changes.push(
      limitNewFileMode({
        absolutePath: verdict.realPath,
        displayPath: verdict.relativePath,
        before: current.content,
        after: change.postHash === null ? null : blobs.get(change.postHash),
        mode: current.mode,
        modeAfter: change.modeAfter,
        ...(change.dropped ? { dropped: change.dropped } : {}),
      }),
    );
  }
  return { changes };
}

function whyUnbound(preview: CommandRunPreview): string {
  if (preview.network !== 'none' || preview.egress.length > 0)
    return 'its dry run could use the network, so a second run may not do the same';
  if (preview.timedOut) return 'its dry run timed out';
  if (preview.oomKilled) return 'its dry run ran out of memory';
  if (preview.conflicts.length > 0) return 'files changed while its dry run ran';
  return 'its dry run was not bound to the files it read';
}

function listed(paths: readonly string[]): string {
  return paths.length <= 5 ? paths.join(', ') : `${paths.slice(0, 5).join(', ')} and ${paths.length - 5} more`;
}

export const APPLIED_DRY_RUN: ExecutionChoice = {
  appliedDryRun: true,
  summary: 'applied the approved dry run: same files, image, arguments and environment, no network; the command did not run again',
};

export function ranAgain(reason: string): ExecutionChoice {
  return { appliedDryRun: false, summary: `ran again because ${reason}`, reason };
}
