import { Command, Option } from 'commander';
import { createInterface } from 'node:readline/promises';
import { ExecutorError } from '../../domain/errors.js';
import { visibleBlock, visibleLine, visibleOutput } from '../../domain/visible-text.js';
import { isSettled, STEP_STATUSES, type StepStatus } from '../../domain/state-machine.js';
import { globals, print, withExecutor } from '../cli-context.js';
import { readPlanFile } from '../plan-file.js';
import { detailText, explainOutcome, outcomeOf, previewHashText, summaryLine } from '../render.js';
import { proposeAndAwaitDecision } from '../../ipc/decision-wait.js';
import { proposeAndAwaitPreparation } from '../../ipc/preparation-wait.js';
import { readStepsWhileUnlocked } from '../step-reader.js';

/** A preview hash as `steps show` prints it: 64 hex digits, or "none" for a step shown without a preview. */
function parsePreviewHash(text: string): string | null {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === 'none') return null;
  if (/^[0-9a-f]{64}$/.test(trimmed)) return trimmed;
  throw new ExecutorError('INVALID_INPUT', `--preview-hash takes the 64-hex-digit "Preview" hash \`executor steps show\` printed (or "none"), not "${visibleLine(text.slice(0, 80))}".`);
}

/** One y/N question on the terminal; anything but y or yes is no. */
async function askYes(question: string): Promise<boolean> {
  // Ctrl-D (the terminal closed the input), even typed before the question, is a no, never a wait that does not end.
  if (process.stdin.readableEnded) return false;
  const readline = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await new Promise<boolean>((resolve) => {
      readline.once('close', () => resolve(false));
      process.stdin.once('end', () => resolve(false));
      readline.question(question).then((answer) => resolve(/^\s*y(es)?\s*$/i.test(answer)), () => resolve(false));
    });
  } finally {
    readline.close();
  }
}

/** propose, steps list|show, approve, reject, revert: the person's way through a plan. */
export function registerStepCommands(program: Command): void {
  program
    .command('propose')
    .description('propose a plan file: validate, evaluate, auto-approve what the policy allows, and run approved steps in order')
    .argument('<plan>', 'plan file (JSON)')
    .option('--wait', 'wait until every step is decided and print one result per step')
    .option('--timeout <seconds>', 'give up waiting after this many seconds (for the decisions with --wait; else for a running app to prepare the previews, default 600)', (v) => Number.parseFloat(v))
    .action(async (planFile: string, options: { wait?: boolean; timeout?: number }, command: Command) => {
      const { dataDir, json } = globals(command);
      const plan = readPlanFile(planFile);
      const sayWaiting = (open: number) => {
        if (!json) process.stderr.write(`Waiting for a decision on ${open} step(s): approve or reject them with \`executor approve ID\` / \`executor reject ID --reason …\`.\n`);
      };
      const waitMs = options.timeout === undefined ? undefined : options.timeout * 1000;
      let { records, reach } = await withExecutor(dataDir, async (api, reach) => {
        // With a host running, --wait listens to its events; without one the database is read below.
        if (options.wait && reach === 'host') return { records: await proposeAndAwaitDecision(api, plan, { waitMs, onWaiting: sayWaiting }), reach };
        if (reach === 'direct') return { records: await api.propose({ plan }), reach };
        // A host answers before the previews exist: wait for them, so what is printed shows each step's preview.
        const prepared = await proposeAndAwaitPreparation(api, plan, { waitMs });
        if (prepared.timedOut && !json) process.stderr.write('Some steps were still being prepared when the wait ended; `executor steps list --plan PLAN` shows them later.\n');
        return { records: prepared.records, reach };
      });
      if (options.wait && reach === 'direct' && !records.every((record) => isSettled(record.status))) {
        sayWaiting(records.filter((r) => !isSettled(r.status)).length);
        records = await readStepsWhileUnlocked(dataDir, records[0]!.step.planId, options.timeout);
      }
      const outcomes = records.map(outcomeOf);
      print(json, outcomes, () => records.map(summaryLine).join('\n') + '\n' + records.map(explainOutcome).filter(Boolean).join('\n'));
      process.exitCode = records.every((record) => record.status === 'executed') ? 0 : 1;
    });

  const steps = program.command('steps').description('list and inspect steps');
  steps
    .command('list')
    .description('list steps, newest first')
    .addOption(new Option('--status <status...>', 'only steps in these statuses').choices([...STEP_STATUSES]))
    .option('--plan <planId>', 'only the steps of one plan')
    .action(async (options: { status?: StepStatus[]; plan?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const records = await withExecutor(dataDir, (api) => api.listSteps({ status: options.status, planId: options.plan }));
      print(json, records, () => (records.length ? records.map(summaryLine).join('\n') : 'No steps.'));
    });
  steps
    .command('show')
    .description('show one step: risk, reasons, preview, approval, result')
    .argument('<stepId>')
    .action(async (stepId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const record = await withExecutor(dataDir, (api) => api.getStep({ stepId }));
      print(json, record, () => detailText(record));
    });

  program
    .command('approve')
    .description(
      'approve a step awaiting consent, bound to the preview you saw; it runs at once unless an earlier step of its plan is still open. ' +
        'On a terminal, without --preview-hash, it shows the step and its preview and asks; elsewhere --preview-hash is required',
    )
    .argument('<stepId>')
    .option('--preview-hash <hash>', 'the "Preview" hash `executor steps show` printed ("none" when it had no preview); refused if the preview changed since')
    .action(async (stepId: string, options: { previewHash?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const interactive = !json && process.stdin.isTTY === true && process.stdout.isTTY === true;
      const given = options.previewHash === undefined ? undefined : parsePreviewHash(options.previewHash);
      if (given === undefined && !interactive) {
        throw new ExecutorError(
          'INVALID_INPUT',
          `approve binds to the preview you saw, and it cannot show you one here (no terminal): run \`executor steps show ${stepId}\`, read the preview, then \`executor approve ${stepId} --preview-hash <the Preview hash it printed>\`.`,
        );
      }
      const record = await withExecutor(dataDir, async (api) => {
        if (given !== undefined) return api.approve({ stepId, previewHash: given });
        // Shown and approved in one invocation: the approval carries the hash of exactly what was printed.
        const shown = await api.getStep({ stepId });
        if (shown.status !== 'awaiting_consent') return api.approve({ stepId, previewHash: shown.previewHash });
        process.stdout.write(`${visibleOutput(detailText(shown))}\n\n`);
        if (!(await askYes(`Approve step ${visibleLine(stepId)} with the preview shown above (${previewHashText(shown)})? [y/N] `))) return null;
        return api.approve({ stepId, previewHash: shown.previewHash });
      });
      if (!record) {
        process.stdout.write('Not approved; the step still waits for your decision.\n');
        process.exitCode = 1;
        return;
      }
      print(json, outcomeOf(record), () => summaryLine(record) + (record.error ? `\n${record.error.code}: ${record.error.message}` : ''));
      if (record.status === 'failed') process.exitCode = 1;
    });

  program
    .command('reject')
    .description('reject a step; the reason goes back to whoever proposed it')
    .argument('<stepId>')
    .requiredOption('--reason <text>', 'why (required)')
    .action(async (stepId: string, options: { reason: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const record = await withExecutor(dataDir, (api) => api.reject({ stepId, reason: options.reason }));
      print(json, outcomeOf(record), () => summaryLine(record));
    });

  program
    .command('revert')
    .description('restore every file a step changed, if nobody changed them since')
    .argument('<stepId>')
    .option('--force', 'overwrite files that changed after the step (recorded as a forced revert)')
    .action(async (stepId: string, options: { force?: boolean }, command: Command) => {
      const { dataDir, json } = globals(command);
      let record;
      try {
        record = await withExecutor(dataDir, (api) => api.revertStep({ stepId, force: options.force }));
      } catch (error) {
        if (!json && error instanceof ExecutorError && error.code === 'REVERT_CONFLICT') process.stderr.write(conflictDiffs(error));
        throw error;
      }
      print(json, outcomeOf(record), () => summaryLine(record));
    });
}

/** What a revert would do to each conflicting file as it is now: the person decides on --force from this, not from hashes. */
function conflictDiffs(error: ExecutorError): string {
  const conflicts = (error.details?.conflicts ?? []) as { path: string; diff?: string | null; diffOmittedReason?: string }[];
  // File content is untrusted text: escapes in it must not move the cursor over the diff the person reads.
  const shown = conflicts.map((conflict) => `--- ${visibleLine(conflict.path)}: on disk now (-) → after revert (+)\n${conflict.diff ? visibleBlock(conflict.diff) : `(${visibleLine(conflict.diffOmittedReason ?? 'no text diff')})`}\n`);
  return `${shown.join('\n')}\nRevert with --force to apply this anyway: what is on disk now is kept as the backup of a "Forced revert" step, which you can revert in turn.\n`;
}
