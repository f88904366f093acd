import { Command, Option } from 'commander';
import { actorFor } from '../domain/actor.js';
import { ExecutorError, toErrorShape } from '../domain/errors.js';
import { isSettled } from '../domain/state-machine.js';
import { Executor } from '../executor/executor.js';
import { defaultDataDir } from '../store/data-dir.js';
import { readPlanFile } from './plan-file.js';
import { detailText, explainOutcome, outcomeOf, summaryLine } from './render.js';
import { readStepsWhileUnlocked } from './step-reader.js';
import { STEP_STATUSES, type StepStatus } from '../domain/state-machine.js';

interface GlobalOptions {
  dataDir?: string;
  json?: boolean;
}

const CLI_ACTOR = actorFor('cli');

const program = new Command()
  .name('executor')
  .description('Stands between AI agents and your machine: every step is risk-rated, previewed, consented, backed up and audited.')
  .option('--data-dir <dir>', 'data directory (default: EXECUTOR_DATA_DIR or the OS app-data folder)')
  .option('--json', 'machine-readable output')
  .showHelpAfterError();

function globals(command: Command): { dataDir: string; json: boolean } {
  const options = command.optsWithGlobals<GlobalOptions>();
  return { dataDir: options.dataDir ?? defaultDataDir(), json: options.json === true };
}

function print(json: boolean, value: unknown, text: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
}

/** Opens the Executor for one command and always releases the data-directory lock afterwards. */
async function withExecutor<T>(dataDir: string, work: (executor: Executor) => Promise<T>): Promise<T> {
  const executor = Executor.open(dataDir);
  try {
    return await work(executor);
  } finally {
    executor.close();
  }
}

program
  .command('propose')
  .description('propose a plan file: validate, evaluate, auto-approve what the policy allows, and run approved steps in order')
  .argument('<plan>', 'plan file (JSON)')
  .option('--wait', 'wait until every step is decided and print one result per step')
  .option('--timeout <seconds>', 'with --wait, give up waiting after this many seconds', (v) => Number.parseFloat(v))
  .action(async (planFile: string, options: { wait?: boolean; timeout?: number }, command: Command) => {
    const { dataDir, json } = globals(command);
    const plan = readPlanFile(planFile);
    let records = await withExecutor(dataDir, (executor) => executor.propose(plan, CLI_ACTOR));
    if (options.wait && !records.every((record) => isSettled(record.status))) {
      if (!json) process.stderr.write(`Waiting for a decision on ${records.filter((r) => !isSettled(r.status)).length} step(s): approve or reject them with \`executor approve ID\` / \`executor reject ID --reason …\`.\n`);
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
    const records = await withExecutor(dataDir, async (executor) => executor.listSteps({ status: options.status, planId: options.plan }));
    print(json, records, () => (records.length ? records.map(summaryLine).join('\n') : 'No steps.'));
  });
steps
  .command('show')
  .description('show one step: risk, reasons, preview, approval, result')
  .argument('<stepId>')
  .action(async (stepId: string, _options: unknown, command: Command) => {
    const { dataDir, json } = globals(command);
    const record = await withExecutor(dataDir, async (executor) => executor.getStep(stepId));
    print(json, record, () => detailText(record));
  });

program
  .command('approve')
  .description('approve a step awaiting consent; it runs at once unless an earlier step of its plan is still open')
  .argument('<stepId>')
  .action(async (stepId: string, _options: unknown, command: Command) => {
    const { dataDir, json } = globals(command);
    const record = await withExecutor(dataDir, (executor) => executor.approve(stepId, CLI_ACTOR));
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
    const record = await withExecutor(dataDir, (executor) => executor.reject(stepId, CLI_ACTOR, options.reason));
    print(json, outcomeOf(record), () => summaryLine(record));
  });

program
  .command('revert')
  .description('restore every file a step changed, if nobody changed them since')
  .argument('<stepId>')
  .option('--force', 'overwrite files that changed after the step (recorded as a forced revert)')
  .action(async (stepId: string, options: { force?: boolean }, command: Command) => {
    const { dataDir, json } = globals(command);
    const record = await withExecutor(dataDir, (executor) => executor.revertStep(stepId, CLI_ACTOR, { force: options.force }));
    print(json, outcomeOf(record), () => summaryLine(record));
  });

const audit = program.command('audit').description('read the audit trail');
audit
  .command('show')
  .description('show audit records')
  .option('--step <stepId>')
  .option('--plan <planId>')
  .action(async (options: { step?: string; plan?: string }, command: Command) => {
    const { dataDir, json } = globals(command);
    const entries = await withExecutor(dataDir, async (executor) => executor.getAudit({ stepId: options.step, planId: options.plan, limit: 10_000 }));
    print(json, entries, () =>
      entries.map((e) => `${String(e.seq).padStart(6)} ${e.ts} ${e.kind.padEnd(24)} ${e.stepId ?? '-'} ${e.actor.user}/${e.actor.channel}`).join('\n'),
    );
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  const shaped = toErrorShape(error);
  const json = process.argv.includes('--json');
  if (json) process.stdout.write(`${JSON.stringify({ error: shaped }, null, 2)}\n`);
  else process.stderr.write(`executor: ${shaped.code}: ${shaped.message}\n`);
  if (!(error instanceof ExecutorError) && process.env.EXECUTOR_DEBUG) console.error(error);
  process.exitCode = 2;
}
