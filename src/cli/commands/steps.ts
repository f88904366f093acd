import { Command, Option } from 'commander';
import fs from 'node:fs';
import { MAX_CONTENT_BYTES } from '../../domain/step-limits.js';
import type { RevertPlanEntry } from '../../backup/file-changes.js';
import type { DirectoryRevertOutcome, DirectoryRevertPlanEntry } from '../../domain/created-directory.js';
import { ExecutorError } from '../../domain/errors.js';
import { visibleBlock, visibleLine, visibleOutput } from '../../domain/visible-text.js';
import { STEP_STATUSES, type StepStatus } from '../../domain/state-machine.js';
import { toErrorShape } from '../../domain/errors.js';
import { visibleJson } from '../../domain/visible-text.js';
import { globals, print, readEvenWhenFull, sayDataDir, withExecutor, type ExecutorReach } from '../cli-context.js';
import { readPlanFile } from '../plan-file.js';
import { resultWords } from '../../domain/result-words.js';
import { flatText } from '../../domain/sentence-text.js';
import { STATUS_SENTENCE_WORDS } from '../../domain/status-words.js';
import type { StepRecord } from '../../domain/step-record.js';
import { resolveId } from '../id-prefix.js';
import { askYes } from '../terminal-question.js';

/** The whole record through bounded replies; loaded when a command needs it, so `--help` stays light. */
async function getWholeStep(...args: Parameters<typeof import('../../ipc/client/whole-step-record.js').getWholeStep>) {
  return (await import('../../ipc/client/whole-step-record.js')).getWholeStep(...args);
}

/*
 * What the actions print with (render.js names every action's module) and wait with is imported
 * when an action runs: `--help` loads commander and these definitions only (see main.ts).
 */
const rendering = () => import('../render.js');

/** A preview hash as `steps show` prints it: 64 hex digits, or "none" for a step shown without a preview. */
function parsePreviewHash(text: string): string | null {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === 'none') return null;
  if (/^[0-9a-f]{64}$/.test(trimmed)) return trimmed;
  throw new ExecutorError(
    'INVALID_INPUT',
    `--preview-hash takes the 64-hex-digit "Preview" hash \`executor steps show\` printed (or "none"), not "${visibleLine(text.slice(0, 80))}".`,
  );
}

/** --hunks 1,3: the hunk numbers (from 1) `steps show` printed; the host checks range and repeats. */
function parseHunkList(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim());
  if (text.trim() === '' || parts.some((part) => !/^[0-9]{1,6}$/.test(part))) {
    throw new ExecutorError(
      'INVALID_INPUT',
      `--hunks takes hunk numbers separated by commas, as \`executor steps show\` numbers them (e.g. 1,3), not "${visibleLine(text.slice(0, 80))}". To approve none, reject the step instead.`,
    );
  }
  return parts.map(Number);
}

/** --timeout: a number of seconds, more than zero. */
function parseTimeout(text: string): number {
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 7 * 24 * 3600) {
    throw new ExecutorError(
      'INVALID_INPUT',
      `--timeout takes a number of seconds above 0 (at most a week), not "${visibleLine(text.slice(0, 40))}".`,
    );
  }
  return seconds;
}

/** The host did not let propose --wait finish in time: say so and end the command now, as promised. */
function giveUp(json: boolean, seconds: number): never {
  const shaped = toErrorShape(
    new ExecutorError(
      'IPC_UNAVAILABLE',
      `The Executor host did not answer within ${seconds} s. If it stored the plan, \`executor steps list\` shows it; nothing more is known here.`,
    ),
  );
  if (json) process.stdout.write(`${visibleJson(JSON.stringify({ error: shaped }, null, 2))}\n`);
  else process.stderr.write(`executor: ${shaped.code}: ${visibleLine(shaped.message)}\n`);
  process.exit(2);
}

/** propose, steps list|show, approve, reject, revert: the person's way through a plan. */
export function registerStepCommands(program: Command): void {
  program
    .command('propose')
    .description('propose a plan file: validate, evaluate, auto-approve what the policy allows, and run approved steps in order')
    .argument('<plan>', 'plan file (JSON)')
    .option(
      '--wait',
      'wait until nothing more can happen without a person (previews ready, allowed steps run), then print one result per step and say which steps wait for whom',
    )
    .option(
      '--timeout <seconds>',
      'stop waiting for a running host after this many seconds, whatever it does (with --wait: for the plan to need a person; without: for the host to prepare the previews, default 600)',
      parseTimeout,
    )
    .action(async (planFile: string, options: { wait?: boolean; timeout?: number }, command: Command) => {
      const { dataDir, json } = globals(command);
      const plan = readPlanFile(planFile);
      const [{ explainOutcome, outcomeOf, summaryLine, whoMustAct }, { proposeAndAwaitDecision }, { proposeAndAwaitPreparation }] =
        await Promise.all([rendering(), import('../../ipc/client/decision-wait.js'), import('../../ipc/client/preparation-wait.js')]);
      const waitMs = options.timeout !== undefined ? options.timeout * 1000 : undefined;
      // The guarantee behind --timeout: a host that stops answering (even before it says hello) cannot hold this
      // command past it. Without a host the command runs the steps itself, and is never stopped mid-step.
      const backstop = waitMs !== undefined ? setTimeout(() => giveUp(json, options.timeout!), waitMs + 500) : undefined;
      backstop?.unref();
      let reached: ExecutorReach = 'direct';
      const records = await withExecutor(dataDir, async (api, reach) => {
        reached = reach;
        await sayDataDir(command, reach);
        if (reach === 'direct') {
          clearTimeout(backstop);
          // Without a host, propose itself ran everything that could run: what it returns is already that point.
          return api.propose({ plan });
        }
        // With a host, --wait follows its events until only a person can move the plan.
        if (options.wait) return proposeAndAwaitDecision(api, plan, { waitMs, until: 'needsPerson', boundCalls: true });
        // A host answers before the previews exist: wait for them, so what is printed shows each step's preview.
        const prepared = await proposeAndAwaitPreparation(api, plan, { waitMs });
        if (prepared.timedOut && !json)
          process.stderr.write(
            'Some steps were still being prepared when the wait ended; `executor steps list --plan PLAN` shows them later.\n',
          );
        return prepared.records;
      });
      clearTimeout(backstop);
      const outcomes = records.map(outcomeOf);
      print(json, outcomes, () => records.map(summaryLine).join('\n') + '\n' + records.map(explainOutcome).filter(Boolean).join('\n'));
      const who = whoMustAct(records, reached);
      if (who && !json) process.stderr.write(`${who}\n`);
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
      const { summaryLine } = await rendering();
      const filter = { status: options.status, planId: options.plan };
      const records = await readEvenWhenFull(
        dataDir,
        () =>
          withExecutor(dataDir, async (api, reach) => {
            await sayDataDir(command, reach);
            const listed = await api.listSteps({
              ...filter,
              ...(options.plan ? { planId: await resolveId(api, 'plan', options.plan) } : {}),
            });
            // Execution held on a full data directory: said beside the list (on stderr, so --json output keeps its shape).
            const hold = reach === 'host' ? await api.getStorageHold().catch(() => null) : null;
            if (hold?.held && hold.notice) process.stderr.write(`executor: ${visibleLine(hold.notice)}\n`);
            return listed;
          }),
        (stored) => stored.list(filter),
      );
      // What each step came to, in the words the window's History uses (result-words.ts).
      print(json, records, () =>
        records.length ? records.map((record) => `${summaryLine(record)}${resultSuffix(record)}`).join('\n') : 'No steps.',
      );
    });
  steps
    .command('show')
    .description('show one step: risk, reasons, preview, approval, result')
    .argument('<stepId>')
    .action(async (stepId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const { detailText } = await rendering();
      const { liveRunText } = await rendering();
      // The policy in force says how long a command or code may run; a step is still shown without it.
      // A run under way is known only to the host running it: its tail is shown when a host answers.
      const { record, limits, live } = await readEvenWhenFull(
        dataDir,
        () =>
          withExecutor(dataDir, async (api, reach) => {
            const id = await resolveId(api, 'step', stepId);
            return {
              record: await getWholeStep(api, id),
              limits: await api.getPolicy().catch(() => undefined),
              live: reach === 'host' ? ((await api.listLiveRuns({ stepId: id }).catch(() => []))[0] ?? null) : null,
            };
          }),
        (stored) => ({ record: stored.get(stepId), limits: undefined, live: null }),
      );
      print(
        json,
        live ? { ...record, liveRun: live } : record,
        () => detailText(record, limits) + (live ? `\n\n${liveRunText(live)}` : ''),
      );
    });
  steps
    .command('watch')
    .description(
      "follow a step's sandbox run as it goes (a running host's): elapsed time and its output as it comes, until the run ends; Ctrl-C stops watching, not the run",
    )
    .argument('<stepId>')
    .action(async (stepId: string, _options: unknown, command: Command) => {
      const { dataDir } = globals(command);
      const { liveRunText, summaryLine, tailLines } = await rendering();
      const { localTimeWords } = await import('../time-words.js');
      const { durationText } = await import('../../domain/run-step-facts.js');
      await withExecutor(dataDir, async (api, reach) => {
        stepId = await resolveId(api, 'step', stepId);
        const record = await getWholeStep(api, stepId);
        if (reach !== 'host') {
          process.stdout.write(
            `${visibleOutput(summaryLine(record))}\nNo Executor host is running for this data directory, so nothing runs now; \`executor steps show ${visibleLine(stepId)}\` shows what is recorded.\n`,
          );
          return;
        }
        await new Promise<void>((resolve) => {
          let current: string | null = null;
          // A run under way whose last frame has not come yet: the step's end is said after it, so no output follows the end.
          let runOpen = false;
          let endLine: string | null = null;
          const write = (text: string) => process.stdout.write(`${visibleOutput(text)}\n`);
          const finish = (text: string) => {
            if (runOpen) {
              endLine = text;
              return;
            }
            write(text);
            resolve();
          };
          const following = api.on('run', (frame) => {
            if (frame.stepId !== stepId) return;
            if (frame.startedAt !== current) {
              current = frame.startedAt;
              write(`--- ${frame.phase === 'dryRun' ? 'dry run' : 'run'} started ${localTimeWords(frame.startedAt)}`);
            }
            if (frame.replace) write('--- (more came than is kept; the last lines follow)');
            const lines = tailLines(frame.chunks);
            if (lines.length) write(lines.join('\n'));
            runOpen = !frame.endedAt;
            if (frame.endedAt) {
              write(
                `--- ${frame.cancelling ? 'cancelled' : 'ended'} after ${durationText(Date.parse(frame.endedAt) - Date.parse(frame.startedAt))}`,
              );
              if (endLine !== null) finish(endLine);
            }
          });
          const settled = api.on('step', (changed) => {
            if (changed.step.id !== stepId) return;
            // Settled, or waiting for the person: no run of it follows without them.
            if (!['proposed', 'evaluated', 'approved', 'running'].includes(changed.status)) finish(summaryLine(changed));
          });
          // Listed once both streams are subscribed: nothing between the list and the first frame is missed.
          void Promise.all([following, settled])
            .then(() => api.listLiveRuns({ stepId }))
            .then(([live]) => {
              if (live) {
                if (current !== live.startedAt) runOpen = true;
                current = live.startedAt;
                write(liveRunText(live));
              } else if (!['proposed', 'evaluated', 'approved', 'running'].includes(record.status)) {
                write(`${summaryLine(record)}\nNo run of it is under way.`);
                resolve();
              }
            });
        });
      });
    });
  steps
    .command('cancel')
    .description(
      'stop a step: its sandbox run under way (dry or real: the container or worker is killed and the step ends cancelled), or withdraw it while it waits (it ends rejected)',
    )
    .argument('<stepId>')
    .action(async (stepId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const { outcomeOf, summaryLine } = await rendering();
      const record = await withExecutor(dataDir, async (api) => api.cancel({ stepId: await resolveId(api, 'step', stepId) }));
      print(json, outcomeOf(record), () => summaryLine(record) + (record.error ? `\n${record.error.message}` : ''));
    });

  program
    .command('approve')
    .description(
      'approve a step awaiting consent, bound to the preview you saw; it runs at once unless an earlier step of its plan is still open. ' +
        'On a terminal, without --preview-hash, it shows the step and its preview and asks; elsewhere --preview-hash is required',
    )
    .argument('<stepId>')
    .option(
      '--preview-hash <hash>',
      'the "Preview" hash `executor steps show` printed ("none" when it had no preview); refused if the preview changed since',
    )
    .option(
      '--hunks <numbers>',
      'a file write over an existing text file: apply only these hunks of its diff (numbered as `executor steps show` prints them, e.g. 1,3); recorded as approved with edits',
      parseHunkList,
    )
    .action(async (stepId: string, options: { previewHash?: string; hunks?: number[] }, command: Command) => {
      const { dataDir, json } = globals(command);
      const interactive = !json && process.stdin.isTTY === true && process.stdout.isTTY === true;
      const given = options.previewHash === undefined ? undefined : parsePreviewHash(options.previewHash);
      const hunks = options.hunks;
      const { detailText, outcomeOf, previewHashText, summaryLine } = await rendering();
      if (given === undefined && !interactive) {
        throw new ExecutorError(
          'INVALID_INPUT',
          `approve binds to the preview you saw, and it cannot show you one here (no terminal): run \`executor steps show ${stepId}\`, read the preview, then \`executor approve ${stepId} --preview-hash <the Preview hash it printed>\`.`,
        );
      }
      const record = await withExecutor(dataDir, async (api) => {
        stepId = await resolveId(api, 'step', stepId);
        if (given !== undefined) return api.approve({ stepId, previewHash: given, ...(hunks ? { hunks } : {}) });
        // Shown and approved in one invocation: the approval carries the hash of exactly what was printed.
        const shown = await getWholeStep(api, stepId);
        if (shown.status !== 'awaiting_consent')
          return api.approve({ stepId, previewHash: shown.previewHash, ...(hunks ? { hunks } : {}) });
        process.stdout.write(`${visibleOutput(detailText(shown, await api.getPolicy().catch(() => undefined)))}\n\n`);
        const which = hunks ? ` with only hunks ${hunks.join(', ')}` : '';
        if (!(await askYes(`Approve step ${visibleLine(stepId)}${which} with the preview shown above (${previewHashText(shown)})? [y/N] `)))
          return null;
        return api.approve({ stepId, previewHash: shown.previewHash, ...(hunks ? { hunks } : {}) });
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
    .command('edit')
    .description(
      "edit a step waiting for your decision before approving it: a file write's content or a command line. Your version is weighed by the policy " +
        '(an edit can raise the risk), previewed again and waits for your approval; the proposal stays on record and the agent is told what changed',
    )
    .argument('<stepId>')
    .option('--content-file <file>', 'a file write: the new content, read from this file (text)')
    .option('--command <line>', 'a command: the new command line (run under sh -c in the sandbox)')
    .action(async (stepId: string, options: { contentFile?: string; command?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      if ((options.contentFile === undefined) === (options.command === undefined)) {
        throw new ExecutorError(
          'INVALID_INPUT',
          'edit takes exactly one of --content-file FILE (a file write) or --command "LINE" (a command).',
        );
      }
      const content = options.contentFile === undefined ? undefined : readEditedContent(options.contentFile);
      const { detailText, summaryLine } = await rendering();
      const record = await withExecutor(dataDir, async (api) => {
        stepId = await resolveId(api, 'step', stepId);
        const edited = await api.editStep({ stepId, ...(content !== undefined ? { content } : { command: options.command }) });
        if (edited.status !== 'evaluated') return edited;
        // The new preview is prepared in the background: wait for it, so what is printed shows it.
        const { awaitStepLeaves } = await import('../../ipc/client/preparation-wait.js');
        return awaitStepLeaves(api, stepId, 'evaluated', 600_000);
      });
      print(json, record, () => `${summaryLine(record)}\n\n${detailText(record)}`);
      if (record.status !== 'awaiting_consent') {
        process.exitCode = 1;
        // Saved, but it did not come back for a decision (its new preview failed, it expired, it was withdrawn): say so.
        const why = record.rejectedReason ?? record.error?.message ?? record.evaluation?.reasons.join(' ');
        if (!json)
          process.stderr.write(
            `Your edit of step ${visibleLine(stepId)} was saved, but the step did not come back for your decision: it ${statusSentence(record.status)}${why ? ` (${visibleLine(flatText(why))})` : ''}.\n`,
          );
      }
    });

  program
    .command('reject')
    .description('reject a step; the reason goes back to whoever proposed it')
    .argument('<stepId>')
    .requiredOption('--reason <text>', 'why (required)')
    .action(async (stepId: string, options: { reason: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const { outcomeOf, summaryLine } = await rendering();
      const record = await withExecutor(dataDir, async (api) =>
        api.reject({ stepId: await resolveId(api, 'step', stepId), reason: options.reason }),
      );
      print(json, outcomeOf(record), () => summaryLine(record));
    });

  program
    .command('revert')
    .description(
      'restore every file a step changed, if nobody changed them since, and remove the folders it created where they are empty; with --plan, every step of a plan that ran, newest first',
    )
    .argument('[stepId]')
    .option(
      '--plan <planId>',
      'revert every step of this plan that ran, newest first; refused before anything changes if any step would conflict, unless --force',
    )
    .option('--session <agentId>', 'revert every step of this agent session (`executor sessions list`) that ran, newest first; as --plan')
    .option('--run <runId>', 'revert every step this agent run (`executor runs list`) ran, newest first; as --plan')
    .option('--force', 'overwrite files that changed after the step (recorded as a forced revert)')
    .option(
      '--leave <stepId...>',
      'with --plan, --run or --session: leave these steps as they are (keeping the changes made since them) and revert the others; an older step that wrote the same file then meets the kept change as a conflict',
    )
    .option(
      '--dry-run',
      'only show what revert would do with each file and each folder the step created (with --plan: each step, and why a step is left as it is); change nothing, and exit as the real revert would: 2 with its error when it would refuse (a conflict without --force, nothing to revert)',
    )
    .action(
      async (
        stepId: string | undefined,
        options: { plan?: string; session?: string; run?: string; force?: boolean; dryRun?: boolean; leave?: string[] },
        command: Command,
      ) => {
        const { dataDir, json } = globals(command);
        if (options.leave !== undefined && options.plan === undefined && options.run === undefined && options.session === undefined)
          throw new ExecutorError(
            'INVALID_INPUT',
            '--leave names steps to keep while the others are reverted; it goes with --plan PLAN_ID, --run RUN_ID or --session AGENT_ID.',
          );
        if ([stepId, options.plan, options.session, options.run].filter((given) => given !== undefined).length !== 1) {
          throw new ExecutorError(
            'INVALID_INPUT',
            'revert takes a step id, --plan PLAN_ID for a whole plan, --run RUN_ID for an agent run, or --session AGENT_ID for a whole agent session (one of them).',
          );
        }
        if (options.run !== undefined) {
          const { revertRunCommand } = await import('./runs.js');
          await revertRunCommand(dataDir, json, options.run, options);
          return;
        }
        if (options.session !== undefined) {
          const { revertSessionCommand } = await import('./sessions.js');
          await revertSessionCommand(dataDir, json, options.session, options);
          return;
        }
        if (options.plan !== undefined) {
          await revertPlanCommand(dataDir, json, options.plan, options);
          return;
        }
        const given = stepId!;
        const { outcomeOf, summaryLine } = await rendering();
        if (options.dryRun) {
          const { preview, record } = await withExecutor(dataDir, async (api) => {
            const id = await resolveId(api, 'step', given);
            return { preview: await api.previewRevert({ stepId: id }), record: await api.getStep({ stepId: id }) };
          });
          const refusal = await stepDryRunRefusal(record, preview, options.force === true);
          print(json, preview, () => revertPreviewText(preview, options.force === true, refusal !== null));
          dryRunExit(refusal);
          return;
        }
        let record;
        try {
          record = await withExecutor(dataDir, async (api) =>
            api.revertStep({ stepId: await resolveId(api, 'step', given), force: options.force }),
          );
        } catch (error) {
          if (!json && error instanceof ExecutorError && error.code === 'REVERT_CONFLICT') process.stderr.write(conflictDiffs(error));
          throw error;
        }
        const directories = record.revertOutcome?.directories ?? [];
        print(json, { ...outcomeOf(record), ...(record.revertOutcome ? { directories } : {}) }, () =>
          [summaryLine(record), ...directories.map(folderOutcomeLine)].join('\n'),
        );
      },
    );
}

/** edit --content-file: the file's text, refused early when it cannot be one (too large, not a regular file, not UTF-8). */
function readEditedContent(file: string): string {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    throw new ExecutorError('INVALID_INPUT', `Cannot read --content-file ${visibleLine(file)}: ${(error as Error).message}`);
  }
  if (!stat.isFile()) throw new ExecutorError('INVALID_INPUT', `--content-file ${visibleLine(file)} is not a regular file.`);
  if (stat.size > MAX_CONTENT_BYTES)
    throw new ExecutorError(
      'INVALID_INPUT',
      `--content-file ${visibleLine(file)} is ${stat.size} bytes; a step's content is at most ${MAX_CONTENT_BYTES / 1024 / 1024} MiB.`,
    );
  const bytes = fs.readFileSync(file);
  try {
    // Fatal: bytes that are not UTF-8 are refused, never replaced by U+FFFD (a write's content is text); a BOM is kept as written.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new ExecutorError(
      'INVALID_INPUT',
      `--content-file ${visibleLine(file)} is not UTF-8 text; an edit of a write's content must be text. Nothing was changed.`,
    );
  }
}

/** Where a step stands as the end of a sentence ("waits for your decision"), never its raw state name. */
function statusSentence(status: string): string {
  return Object.hasOwn(STATUS_SENTENCE_WORDS, status) ? STATUS_SENTENCE_WORDS[status as StepStatus] : `is ${status}`;
}

/** A step's result in words after its summary line, once it has one. */
function resultSuffix(record: StepRecord): string {
  const words = resultWords(record);
  return words === '—' ? '' : `  → ${visibleLine(words)}`;
}

/** `revert --plan`: the plan's steps newest first, or with --dry-run what that would do. */
async function revertPlanCommand(
  dataDir: string,
  json: boolean,
  planId: string,
  options: { force?: boolean; dryRun?: boolean; leave?: string[] },
): Promise<void> {
  // Step ids to leave take a unique prefix or the window's short form, as every step id here does.
  const leaveOf = async (api: Parameters<Parameters<typeof withExecutor>[1]>[0]) =>
    options.leave ? { leave: await Promise.all(options.leave.map((id) => resolveId(api, 'step', id))) } : {};
  if (options.dryRun) {
    const preview = await withExecutor(dataDir, async (api) =>
      api.previewRevertPlan({ planId: await resolveId(api, 'plan', planId), ...(await leaveOf(api)) }),
    );
    const { planRevertRefusal } = await import('../../domain/revert-reasons.js');
    print(json, preview, () => revertPlanPreviewText(preview, options.force === true));
    dryRunExit(planRevertRefusal(preview.planId, preview.steps, options.force === true));
    return;
  }
  // The preview first, for each step's title: a person reads what was reverted, not a list of ids.
  const { result, titles } = await withExecutor(dataDir, async (api) => {
    planId = await resolveId(api, 'plan', planId);
    const leave = await leaveOf(api);
    const titles = new Map((await api.previewRevertPlan({ planId, ...leave })).steps.map((step) => [step.stepId, step.title]));
    return { result: await api.revertPlan({ planId, force: options.force, ...leave }), titles };
  });
  const named = (stepId: string) => `${visibleLine(stepId)}  ${visibleLine(titles.get(stepId) ?? '')}`.trimEnd();
  print(json, result, () =>
    [
      `Plan ${visibleLine(planId)}: reverted ${result.reverted.length === 1 ? '1 step' : `${result.reverted.length} steps`}, newest first${result.forced ? ' (forced: what was overwritten is kept as the backup of "Forced revert" steps)' : ''}:`,
      ...result.reverted.map((stepId) => `  reverted       ${named(stepId)}`),
      ...result.skipped.map((entry) => `  left as it is  ${named(entry.stepId)} (${visibleLine(entry.reason)})`),
    ].join('\n'),
  );
}

/**
 * A dry run exits as the real revert would: 0 when it would go on, 2 (with the same code and words on
 * stderr) when it would refuse. stdout keeps the preview, in --json too.
 */
function dryRunExit(refusal: ExecutorError | null): void {
  if (!refusal) return;
  process.stderr.write(
    `executor: ${refusal.code}: ${visibleLine(refusal.message)} (A dry run: nothing was changed; the real revert would refuse the same way.)\n`,
  );
  process.exitCode = 2;
}

/** Why `revert ID` would refuse this step, judged from the step and its revert preview as the real revert judges it. */
async function stepDryRunRefusal(
  record: StepRecord,
  preview: { files: RevertPlanEntry[]; directories: DirectoryRevertPlanEntry[] },
  force: boolean,
): Promise<ExecutorError | null> {
  const [{ stepRevertRefusal }, { boundAction }] = await Promise.all([
    import('../../domain/revert-reasons.js'),
    import('../../actions/registry.js'),
  ]);
  const { module } = boundAction(record.step);
  const changedSomething =
    preview.files.length > 0 || preview.directories.length > 0 || (module.revertOther !== undefined && record.startedAt !== null);
  const refusal = stepRevertRefusal({
    stepId: record.step.id,
    status: record.status,
    action: record.step.action,
    reversible: module.reversible,
    startedAt: record.startedAt,
    revertedAt: record.revertedAt,
    changedSomething,
  });
  if (refusal) return refusal;
  const conflicts = preview.files.filter((entry) => entry.state === 'conflict').map((entry) => entry.path);
  if (conflicts.length === 0 || force) return null;
  return new ExecutorError(
    'REVERT_CONFLICT',
    `Step ${record.step.id} would not be reverted: ${conflicts.join(', ')} changed after the step. Revert with --force to apply it anyway; what is there now is kept as the backup of a "Forced revert" step.`,
    { stepId: record.step.id, paths: conflicts },
  );
}

function revertPlanPreviewText(
  preview: {
    planId: string;
    steps: { stepId: string; title: string; state: string; reason?: string; files: RevertPlanEntry[]; moreFiles: number }[];
    conflicts: string[];
  },
  force: boolean,
): string {
  const lines = [`Reverting plan ${visibleLine(preview.planId)}${force ? ' with --force' : ''} would, newest step first:`];
  for (const step of preview.steps) {
    const what =
      step.state === 'skip'
        ? `left as it is (${visibleLine(step.reason ?? '')})`
        : step.state === 'conflict'
          ? force
            ? 'forced revert: a file changed after the step; what is there now is kept as a backup'
            : 'CONFLICT: a file changed after the step'
          : 'revert';
    lines.push(`  ${visibleLine(step.stepId)}  ${visibleLine(step.title)}: ${what}`);
    for (const file of step.files) {
      lines.push(
        `    ${visibleLine(file.path)}: ${file.state === 'conflict' ? 'CONFLICT, changed since the step:' : file.state === 'already_restored' ? 'already as before' : file.restoreHash === null ? 'deleted' : 'restored'}`,
      );
      // The newer change on its own (as the step left it → now), as git shows an edit: what a revert would undo.
      if (file.state === 'conflict')
        lines.push(
          file.changedSince
            ? visibleBlock(file.changedSince)
                .split('\n')
                .map((line) => `      ${line}`)
                .join('\n')
            : `      (${visibleLine(file.changedSinceOmittedReason ?? 'no text diff')})`,
        );
    }
    if (step.moreFiles > 0) lines.push(`    … and ${step.moreFiles} more file(s)`);
  }
  if (preview.conflicts.length && !force)
    lines.push(
      `Refused unless --force: ${preview.conflicts.map(visibleLine).join(', ')} would overwrite newer changes (--force keeps them as a backup; --leave STEP_ID keeps that step and its newer change, and reverts the others).`,
    );
  if (preview.steps.every((step) => step.state === 'skip')) lines.push('Refused: no step of this plan is left to revert.');
  return lines.join('\n');
}

/** One folder the step created, after its revert: "kept /ws/notes/: it holds todo.md, which the step did not create". */
function folderOutcomeLine(entry: DirectoryRevertOutcome): string {
  const where = `${visibleLine(entry.path)}/`;
  if (entry.state === 'removed') return `  removed ${where} (the step created it)`;
  if (entry.state === 'gone') return `  ${where} was already gone`;
  return `  kept ${where}: ${visibleLine(entry.reason)}`;
}

/** `revert --dry-run`: what revert would do, file by file and folder by folder (or nothing, when it would refuse the step). */
function revertPreviewText(
  preview: { files: RevertPlanEntry[]; directories: DirectoryRevertPlanEntry[] },
  force: boolean,
  refused: boolean,
): string {
  const files = preview.files.map((entry) => {
    const where = visibleLine(entry.path);
    if (entry.state === 'already_restored') return `  ${where}: already as it was before the step`;
    if (entry.state === 'conflict')
      return force
        ? `  ${where}: changed after the step; will be restored anyway, what is there now kept as the backup of a "Forced revert" step`
        : `  ${where}: CONFLICT: changed after the step (revert refuses; --force keeps what is there as a backup)`;
    return entry.restoreHash === null
      ? `  ${where}: will be deleted (the step created it)`
      : `  ${where}: will be restored to its content from before the step`;
  });
  const folders = preview.directories.map((entry) => {
    const where = `${visibleLine(entry.path)}/`;
    if (entry.state === 'remove') return `  ${where}: will be removed (the step created it, and nothing else is in it)`;
    if (entry.state === 'gone') return `  ${where}: the step created it; it is already gone`;
    return `  ${where}: will stay: ${visibleLine(entry.reason)}`;
  });
  return [
    preview.files.length ? `Files${refused ? ' (the revert would refuse; see below)' : ''}:` : 'No file to restore.',
    ...files,
    ...(folders.length ? ['Folders the step created:', ...folders] : []),
  ].join('\n');
}

/** What a revert would do to each conflicting file as it is now: the person decides on --force from this, not from hashes. */
function conflictDiffs(error: ExecutorError): string {
  const conflicts = (error.details?.conflicts ?? []) as { path: string; diff?: string | null; diffOmittedReason?: string }[];
  // File content is untrusted text: escapes in it must not move the cursor over the diff the person reads.
  const shown = conflicts.map(
    (conflict) =>
      `--- ${visibleLine(conflict.path)}: on disk now (-) → after revert (+)\n${conflict.diff ? visibleBlock(conflict.diff) : `(${visibleLine(conflict.diffOmittedReason ?? 'no text diff')})`}\n`,
  );
  return `${shown.join('\n')}\nRevert with --force to apply this anyway: what is on disk now is kept as the backup of a "Forced revert" step, which you can revert in turn.\n`;
}
