import type { Command } from 'commander';
import type { AuditEntry } from '../../executor/executor.js';
import { globals, print, withExecutor } from '../cli-context.js';

/** audit …: the reviewer's view of the trail. */
export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('read the audit trail');
  audit
    .command('show')
    .description('show audit records')
    .option('--step <stepId>')
    .option('--plan <planId>')
    .action(async (options: { step?: string; plan?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      // getAudit's wire result is loose until the audit storage of issue 3 lands; the entries are AuditEntry today.
      const entries = (await withExecutor(dataDir, (api) => api.getAudit({ stepId: options.step, planId: options.plan, limit: 10_000 }))) as unknown as AuditEntry[];
      print(json, entries, () =>
        entries.map((e) => `${String(e.seq).padStart(6)} ${e.ts} ${e.kind.padEnd(24)} ${e.stepId ?? '-'} ${e.actor.user}/${e.actor.channel}`).join('\n'),
      );
    });
}
