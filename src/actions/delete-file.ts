import { applyFileChanges, readCurrent, type FileChange } from '../backup/file-changes.js';
import { ExecutorError } from '../domain/errors.js';
import type { ActionArgs } from '../domain/step.js';
import type { ActionContext, ActionModule } from './action-module.js';
import { previewFileChangeOffLoop } from '../backup/preview-workers.js';
import { assessFileTarget, resolveFileTarget } from './file-target.js';

function plannedChange(args: ActionArgs<'deleteFile'>, ctx: ActionContext): FileChange {
  const absolutePath = resolveFileTarget(args.path, ctx);
  const current = readCurrent(absolutePath);
  if (current.content === null) {
    throw new ExecutorError('NOT_FOUND', `${args.path} does not exist, so there is nothing to delete.`, { path: args.path });
  }
  return { absolutePath, displayPath: args.path, before: current.content, after: null, mode: current.mode, beforeStamp: current.stamp };
}

export const deleteFile: ActionModule<'deleteFile'> = {
  action: 'deleteFile',
  reversible: true,
  summarize: (args) => `Delete ${args.path}`,
  assess: (args, ctx) => assessFileTarget(args.path, 'delete', ctx),
  ruleTarget: (args) => ({ kind: 'file', path: args.path }),
  async simulate(args, ctx) {
    return { kind: 'fileChanges', files: [await previewFileChangeOffLoop(plannedChange(args, ctx))] };
  },
  async run(args, ctx) {
    const change = plannedChange(args, ctx);
    return {
      fileChanges: [change],
      async apply() {
        applyFileChanges([change]);
        return { path: args.path, bytesRemoved: change.before!.length };
      },
    };
  },
};
