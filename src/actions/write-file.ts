import { readCurrent, type FileChange } from '../backup/file-changes.js';
import fs from 'node:fs';
import path from 'node:path';
import { prepareFileChangesOffThread, type PreparedFileChanges } from '../backup/file-changes.js';
import { contentBytes, knownContentDigest } from '../backup/content-bytes.js';
import { syncDirectories } from '../fs/atomic-write.js';
import { unifiedLineDiff } from '../backup/line-diff.js';
import { sha256Hex } from '../domain/canonical-json.js';
import { ExecutorError } from '../domain/errors.js';
import { applyHunks, assertHunkSelection, parseHunks } from '../domain/hunks.js';
import { wellFormed } from '../domain/json-limits.js';
import type { ActionArgs } from '../domain/step.js';
import type { ActionContext, ActionModule } from './action-module.js';
import { previewFileChangeOffLoop } from '../backup/preview-workers.js';
import { assessFileTarget, resolveFileTarget } from './file-target.js';

/** The content's bytes, this caller's own: a large content's are made and hashed once for its blob, preview and run (content-bytes.ts). */
function contentOf(args: ActionArgs<'writeFile'>): Buffer {
  return contentBytes(args.content, args.encoding === 'base64' ? 'base64' : 'utf8');
}

function plannedChange(args: ActionArgs<'writeFile'>, ctx: ActionContext): FileChange {
  const absolutePath = resolveFileTarget(args.path, ctx);
  const current = readCurrent(absolutePath);
  const after = contentOf(args);
  // The content's sha256 where its blob was named by it: neither the preview nor the run hashes 10 MB again.
  const postHash = knownContentDigest(args.content, args.encoding === 'base64' ? 'base64' : 'utf8');
  return {
    absolutePath,
    displayPath: args.path,
    before: current.content,
    after,
    mode: current.mode,
    beforeStamp: current.stamp,
    ...(postHash ? { knownPostHash: postHash } : {}),
  };
}

/**
 * Room left over, on the target's disk, beyond the new content, the backup of what it replaces and the records: only
 * then is the new content written ahead of the backup and the intent record. Short of that, the backup goes first, as
 * when the write starts after the intent record, so a disk without room for both fails the write (STORAGE_FULL on the
 * workspace file, nothing changed), never the backup (a hold on a data directory the temporary file filled).
 */
const AHEAD_SPARE_BYTES = 64 * 1024 * 1024;

function roomAheadFor(dir: string, change: FileChange): boolean {
  try {
    const disk = fs.statfsSync(dir, { bigint: true });
    const free = disk.bavail * disk.bsize;
    const needed = BigInt((change.after?.length ?? 0) + (change.before?.length ?? 0) + AHEAD_SPARE_BYTES);
    return free >= needed;
  } catch {
    return false;
  }
}

export const writeFile: ActionModule<'writeFile'> = {
  action: 'writeFile',
  reversible: true,
  summarize: (args) => `Write ${args.path} (${Buffer.byteLength(args.content, args.encoding === 'base64' ? 'base64' : 'utf8')} bytes)`,
  assess: (args, ctx) => assessFileTarget(args.path, 'write', ctx),
  ruleTarget: (args) => ({ kind: 'file', path: args.path }),
  async simulate(args, ctx) {
    return { kind: 'fileChanges', files: [await previewFileChangeOffLoop(plannedChange(args, ctx))] };
  },
  async run(args, ctx) {
    const change = plannedChange(args, ctx);
    let prepared: Promise<PreparedFileChanges> | undefined;
    const prepare = () => (prepared ??= prepareFileChangesOffThread([change], ctx.directoryLedger));
    return {
      fileChanges: [change],
      prepareAhead() {
        // Beside a target whose folder is there: ahead of the intent record, a write makes no folder (apply does).
        if (!fs.existsSync(path.dirname(change.absolutePath))) return;
        // Only with room to spare for both: the data directory is usually on the same disk, and a temporary file
        // that took the backup's room would turn a write too big for the disk into a hold of every step.
        if (!roomAheadFor(path.dirname(change.absolutePath), change)) return;
        // A failure is apply's to report (it awaits the same promise), as when the write starts there.
        prepare().catch(() => undefined);
      },
      async discardPrepared() {
        const ahead = prepared;
        prepared = undefined;
        if (ahead) (await ahead.catch(() => null))?.discard();
      },
      async apply() {
        // The content goes to a temporary sibling, written and fsynced on libuv's thread pool (begun while the
        // backup and the intent record were written, prepareAhead); then one short synchronous stretch checks
        // the path again and renames. The fsync of its folder, which makes the rename durable, waits on the
        // thread pool too, and the step's outcome is recorded only once it returned. The host answers requests
        // while the disk works.
        const syncLater = new Set<string>();
        (await prepare()).place({ syncLater });
        await syncDirectories(syncLater);
        return { path: args.path, bytesWritten: change.after!.length, created: change.before === null };
      },
    };
  },
  editable: 'content',
  edited(step, content, proposedStep) {
    const stepId = step.id;
    if (step.args.encoding === 'base64')
      throw new ExecutorError(
        'INVALID_INPUT',
        `Step ${stepId} writes binary content (base64); it cannot be edited as text. Approve or reject it whole.`,
        { stepId },
      );
    if (!wellFormed(content))
      throw new ExecutorError(
        'INVALID_INPUT',
        `The edited content of step ${stepId} is not valid text (it holds a lone UTF-16 surrogate, which no UTF-8 file can hold); nothing was saved.`,
        { stepId },
      );
    if (content === step.args.content)
      throw new ExecutorError(
        'INVALID_INPUT',
        'The edited content is the same as the proposed content; approve the step as it is instead.',
        { stepId },
      );
    const revised = { ...step, args: { ...step.args, content } };
    const proposed = Buffer.from(proposedStep.action === 'writeFile' ? proposedStep.args.content : '', 'utf8');
    const edited = Buffer.from(content, 'utf8');
    const diff = unifiedLineDiff(proposed, edited, 'proposed', 'edited');
    return {
      revised,
      change: { proposedContentHash: sha256Hex(proposed), approvedContentHash: sha256Hex(edited), diff: diff.ok ? diff.patch : null },
    };
  },
  /**
   * A write over an existing text file, with the content the original plus the accepted hunks of the
   * preview's diff. The fresh preview holds the file's hash now and the approved content's sha256, so
   * a file changed since the preview is refused now and again before the write.
   */
  async withHunks(step, shownPreview, accepted, proposedStep, ctx) {
    const stepId = step.id;
    const shown = shownPreview?.kind === 'fileChanges' ? shownPreview.files[0] : undefined;
    if (!shown)
      throw new ExecutorError('INVALID_INPUT', `Step ${stepId} has no preview to choose hunks from; approve or reject it whole.`, {
        stepId,
      });
    if (!shown.existedBefore)
      throw new ExecutorError(
        'INVALID_INPUT',
        `Step ${stepId} creates ${shown.path}, so its diff is one whole addition: approve or reject it whole, or edit its content first.`,
        { stepId },
      );
    if (shown.binary)
      throw new ExecutorError(
        'INVALID_INPUT',
        `${shown.path} is binary: it has no lines to approve one by one. Approve or reject step ${stepId} whole.`,
        { stepId },
      );
    const before = readCurrent(resolveFileTarget(step.args.path, ctx)).content;
    if (before === null || sha256Hex(before) !== shown.preHash) {
      throw new ExecutorError(
        'STEP_CHANGED',
        `${shown.path} changed on disk since the preview of step ${stepId} was made; refresh the preview (steps show, or the window) and choose the hunks again.`,
        { stepId },
      );
    }
    const proposed = contentOf(step.args);
    const isUtf8 = (bytes: Buffer) => Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes);
    if (!isUtf8(before) || !isUtf8(proposed)) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `${shown.path} is not UTF-8 text on both sides, so its hunks cannot be applied one by one exactly; approve or reject step ${stepId} whole.`,
        { stepId },
      );
    }
    const diff = unifiedLineDiff(before, proposed, 'a', 'b');
    if (!diff.ok)
      throw new ExecutorError(
        'INVALID_INPUT',
        `The diff of step ${stepId} could not be split into hunks (${diff.reason}); approve or reject it whole.`,
        { stepId },
      );
    const hunks = parseHunks(diff.patch);
    assertHunkSelection(accepted, hunks.length, stepId);
    if (accepted.length === hunks.length) return 'whole';
    const approvedText = applyHunks(before.toString('utf8'), hunks, accepted);
    const approvedBytes = Buffer.from(approvedText, 'utf8');
    const revised = {
      ...step,
      args: { ...step.args, content: step.args.encoding === 'base64' ? approvedBytes.toString('base64') : approvedText },
    };
    const proposedByAgent = proposedStep.action === 'writeFile' ? contentOf(proposedStep.args) : proposed;
    const changeDiff = unifiedLineDiff(proposedByAgent, approvedBytes, 'proposed', 'approved');
    const change = {
      hunks: { accepted: [...accepted].sort((a, b) => a - b), total: hunks.length },
      proposedContentHash: sha256Hex(proposedByAgent),
      approvedContentHash: sha256Hex(approvedBytes),
      diff: changeDiff.ok ? changeDiff.patch : null,
    };
    const preview = await writeFile.simulate(revised.args, ctx);
    const file = preview.kind === 'fileChanges' ? preview.files[0] : undefined;
    // The file was read again for this preview: it must still be the one the hunks were made from.
    if (!file || file.preHash !== shown.preHash) {
      throw new ExecutorError(
        'STEP_CHANGED',
        `${shown.path} changed on disk while step ${stepId} was being approved; look at the preview again.`,
        { stepId },
      );
    }
    return { revised, change, preview };
  },
};
