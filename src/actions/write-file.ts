import { readCurrent, type FileChange } from '../backup/file-changes.js';
import { applyFileChanges } from '../backup/file-changes.js';
import type { ActionArgs } from '../domain/step.js';
import type { ActionContext, ActionModule } from './action-module.js';
import { previewFileChangeOffLoop } from '../backup/preview-workers.js';
import { assessFileTarget, resolveFileTarget } from './file-target.js';

function contentOf(args: ActionArgs<'writeFile'>): Buffer {
  return Buffer.from(args.content, args.encoding === 'base64' ? 'base64' : 'utf8');
}

function plannedChange(args: ActionArgs<'writeFile'>, ctx: ActionContext): FileChange {
  const absolutePath = resolveFileTarget(args.path, ctx);
  const current = readCurrent(absolutePath);
  return { absolutePath, displayPath: args.path, before: current.content, after: contentOf(args), mode: current.mode };
}

export const writeFile: ActionModule<'writeFile'> = {
  action: 'writeFile',
  reversible: true,
  summarize: (args) => `Write ${args.path} (${contentOf(args).length} bytes)`,
  assess: (args, ctx) => assessFileTarget(args.path, 'write', ctx),
  ruleTarget: (args) => ({ kind: 'file', path: args.path }),
  async simulate(args, ctx) {
    return { kind: 'fileChanges', files: [await previewFileChangeOffLoop(plannedChange(args, ctx))] };
  },
  async run(args, ctx) {
    const change = plannedChange(args, ctx);
    return {
      fileChanges: [change],
      async apply() {
        applyFileChanges([change], ctx.directoryLedger);
        return { path: args.path, bytesWritten: change.after!.length, created: change.before === null };
      },
    };
  },
};
