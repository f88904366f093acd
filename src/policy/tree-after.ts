import fs from 'node:fs';
import path from 'node:path';
import type { Preview } from '../domain/step-record.js';
import type { Step } from '../domain/step.js';
import { readRegularFileSync } from '../fs/regular-file.js';
import { pathGuard, symlinkResolver, type PathVerdictMemo } from './path-guard.js';

/**
 * The workspace as it will be after some changes are applied: the disk now, with the files a plan's
 * steps or a command's changeset write laid over it. Git, a build tool or an editor reads the tree a
 * change leaves, not the one it found: four writes that each look ordinary (`vendor/HEAD`,
 * `vendor/objects/…`, `vendor/refs/…`, `vendor/config`) leave a git directory whose config Git obeys.
 *
 * A path counts as present when it is on disk now or any change writes it (or something inside it):
 * a file one step deletes and another writes was there at some point, and a check that errs towards
 * "present" only ever asks more. A file's texts are all it will hold at some point (now, and each
 * write), so a setting any of them names counts.
 */
export interface TreeAfter {
  exists(absolutePath: string): boolean;
  /** What the file holds now (a regular file only) and what each change writes to it, up to maxBytes each. */
  texts(absolutePath: string, maxBytes: number): string[];
}

function existsOnDisk(absolutePath: string): boolean {
  try {
    // Most paths asked about are not there (a HEAD in each folder above a write): no exception made for them.
    return fs.lstatSync(absolutePath, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

function textOnDisk(absolutePath: string, maxBytes: number): string | undefined {
  if (!existsOnDisk(absolutePath)) return undefined;
  try {
    return readRegularFileSync(absolutePath, { maxBytes }).toString('utf8');
  } catch {
    return undefined;
  }
}

/** The disk alone: what the tree is when nothing is planned. */
export const DISK_TREE: TreeAfter = {
  exists: existsOnDisk,
  texts: (absolutePath, maxBytes) => {
    const text = textOnDisk(absolutePath, maxBytes);
    return text === undefined ? [] : [text];
  },
};

/**
 * One write a plan or a changeset makes: where (a real, absolute path) and, when known, what it writes
 * (or how to make that: a plan's 500 contents are decoded only for the few paths a check reads).
 */
export interface PlannedWrite {
  absolutePath: string;
  content: Buffer | (() => Buffer) | null;
}

/**
 * Planned writes laid over a tree (the disk, or what other changes leave). `caseInsensitive`: the
 * filesystem opens `HEAD` as `head`.
 */
export class PlannedTree implements TreeAfter {
  private readonly files = new Map<string, (Buffer | (() => Buffer))[]>();
  private readonly folders = new Set<string>();

  constructor(
    writes: readonly PlannedWrite[],
    private readonly caseInsensitive = false,
    private readonly base: TreeAfter = DISK_TREE,
  ) {
    for (const write of writes) {
      // Resolved once: the folders above a resolved path are resolved already (path.dirname keeps it so).
      const normalized = path.resolve(write.absolutePath);
      const key = this.caseInsensitive ? normalized.toLowerCase() : normalized;
      const contents = this.files.get(key);
      if (contents === undefined) this.files.set(key, write.content ? [write.content] : []);
      else if (write.content) contents.push(write.content);
      // Every folder above a written file exists once it is written. A folder met already had its own
      // folders added with it: a plan's 500 files in one folder walk up from it once, not 500 times.
      for (let dir = path.dirname(normalized); dir !== path.dirname(dir); dir = path.dirname(dir)) {
        const folder = this.caseInsensitive ? dir.toLowerCase() : dir;
        if (this.folders.has(folder)) break;
        this.folders.add(folder);
      }
    }
  }

  private key(absolutePath: string): string {
    const normalized = path.resolve(absolutePath);
    return this.caseInsensitive ? normalized.toLowerCase() : normalized;
  }

  exists(absolutePath: string): boolean {
    const key = this.key(absolutePath);
    return this.files.has(key) || this.folders.has(key) || this.base.exists(absolutePath);
  }

  texts(absolutePath: string, maxBytes: number): string[] {
    const planned = (this.files.get(this.key(absolutePath)) ?? []).map((content) =>
      (typeof content === 'function' ? content() : content).subarray(0, maxBytes).toString('utf8'),
    );
    return [...this.base.texts(absolutePath, maxBytes), ...planned];
  }
}

/** A step of a plan and, when it has one, the preview of what it changes (a command's changeset). */
export interface PlanStepView {
  step: Step;
  preview?: Preview | null;
}

/**
 * The steps of a plan whose writes the tree it leaves still holds: those that may still run (`pending`
 * statuses), and the step being weighed whatever its status. A step that ran is on the disk the tree
 * lies over (and one reverted is off it again); one that ended without running (rejected, denied,
 * failed before any effect, expired) writes nothing. So a plan run forward reads fewer steps at every
 * step, not all of its steps each time.
 */
export function stepsStillPlanned<View extends PlanStepView & { status: string }>(
  plan: readonly View[],
  weighedStepId: string,
  pending: readonly string[],
): View[] {
  return plan.filter((view) => view.step.id === weighedStepId || pending.includes(view.status));
}

/** The write each step (as parsed once: step-repository's ParsedSteps) was last laid as, by its step. */
const writesOfSteps = new WeakMap<Step, PlannedWrite>();

/**
 * The writes a plan's steps make, as real paths: each writeFile's path and content, and the files a
 * command's previewed changeset leaves. A step whose path leaves the roots writes nothing (it is denied).
 * Read for every step a plan previews and runs: its paths are resolved in one pass (pathGuard), each
 * folder once, so a plan of 500 writes into one folder is not 500 × 500 realpaths. `verdicts`: the
 * verdicts of earlier passes, reused where this pass resolves a path to the same (PathVerdictMemo).
 */
export function plannedWritesOf(
  plan: readonly PlanStepView[],
  roots: readonly string[],
  dataDir: string,
  verdicts?: PathVerdictMemo,
): PlannedWrite[] {
  const writes: PlannedWrite[] = [];
  const guard = pathGuard(roots, dataDir, verdicts);
  const resolveThroughSymlinks = symlinkResolver();
  for (const { step, preview } of plan) {
    if (step.action === 'writeFile') {
      const verdict = guard(step.args.path);
      if (!verdict.ok) continue;
      // The same write as the last pass made for this step (a plan run forward lays its 500 writes again
      // before each step): kept while its path resolves to the same, so a pass makes no garbage for it.
      const kept = writesOfSteps.get(step);
      if (kept?.absolutePath === verdict.realPath) writes.push(kept);
      else {
        const write = {
          absolutePath: verdict.realPath,
          content: () => Buffer.from(step.args.content, step.args.encoding === 'base64' ? 'base64' : 'utf8'),
        };
        writesOfSteps.set(step, write);
        writes.push(write);
      }
    } else if (step.action === 'runCommand' && preview?.kind === 'commandRun' && roots.length > 0) {
      // The changeset's paths are relative to the root the command's working directory is in.
      const cwd = resolveThroughSymlinks(step.args.cwd ? path.resolve(roots[0]!, step.args.cwd) : roots[0]!);
      const root = roots.map(resolveThroughSymlinks).find((real) => cwd === real || cwd.startsWith(real + path.sep));
      if (!root) continue;
      for (const file of preview.files) if (file.existsAfter) writes.push({ absolutePath: path.join(root, file.path), content: null });
    }
  }
  return writes;
}
