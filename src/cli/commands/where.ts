import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import { globals, print, withExecutor } from '../cli-context.js';
import { dataDirText, describeDataDir } from '../data-dir-notice.js';

/** where: which data directory this shell's commands use, and whether a window shows it. */
export function registerWhereCommands(program: Command): void {
  program
    .command('where')
    .description(
      'say which data directory commands here use (and why), whether a window (the app or `executor serve`) serves it, and whether one serves the default instead',
    )
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json, dataDirSource } = globals(command);
      const report = await describeDataDir(dataDir, dataDirSource);
      print(json, report, () => dataDirText(report));
    });

  const roots = program
    .command('roots')
    .description('the workspace roots: the folders steps may change (with none, every file step is CRITICAL)');
  roots
    .command('list')
    .description('list the workspace roots')
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const policy = await withExecutor(dataDir, (api) => api.getPolicy());
      print(json, { workspaceRoots: policy.workspaceRoots }, () =>
        policy.workspaceRoots.length
          ? policy.workspaceRoots.join('\n')
          : 'No workspace root: every file step is CRITICAL. Add one with `executor roots add DIR`.',
      );
    });
  roots
    .command('add')
    .description(
      'add a folder your agents work in (`~` is your home folder); refused for /, your whole home, system folders and the data directory',
    )
    .argument('<dir>', 'the folder')
    .action(async (dir: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const policy = await withExecutor(dataDir, (api) => api.addWorkspaceRoot({ path: dir }));
      print(
        json,
        { workspaceRoots: policy.workspaceRoots },
        () => `Workspace roots:\n${policy.workspaceRoots.map((root) => `  ${root}`).join('\n')}`,
      );
    });
  roots
    .command('remove')
    .description(
      'stop letting steps change a folder: it leaves the workspace roots (steps already done there keep their backups and can still be reverted)',
    )
    .argument('<dir>', 'the root, as `roots list` shows it or as a path to it')
    .action(async (dir: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      // Loaded here, not at the top: the policy module brings zod, and `--help` loads commander only.
      const { expandHome } = await import('../../policy/workspace-root.js');
      const policy = await withExecutor(dataDir, async (api) => {
        const current = await api.getPolicy();
        const named = path.resolve(expandHome(dir.trim()));
        const real = (() => {
          try {
            return fs.realpathSync.native(named);
          } catch {
            return named;
          }
        })();
        const kept = current.workspaceRoots.filter((root) => root !== named && root !== real && path.resolve(root) !== named);
        if (kept.length === current.workspaceRoots.length) {
          const list = current.workspaceRoots.length
            ? `The roots are: ${current.workspaceRoots.join(', ')}.`
            : 'There is no workspace root.';
          throw new ExecutorError('INVALID_INPUT', `${named} is not a workspace root. ${list}`, {
            path: named,
            workspaceRoots: current.workspaceRoots,
          });
        }
        return api.setPolicy({ policy: { ...current, workspaceRoots: kept } });
      });
      print(json, { workspaceRoots: policy.workspaceRoots }, () =>
        policy.workspaceRoots.length
          ? `Workspace roots:\n${policy.workspaceRoots.map((root) => `  ${root}`).join('\n')}`
          : 'No workspace root left: every file step is CRITICAL until you add one with `executor roots add DIR`.',
      );
    });
}
