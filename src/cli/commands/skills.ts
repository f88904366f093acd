import fs from 'node:fs';
import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import type { RepetitionNotice, SkillRecord } from '../../domain/skill.js';
import { SKILL_STATES } from '../../domain/skill-names.js';
import { visibleBlock, visibleJson, visibleLine } from '../../domain/visible-text.js';
import { globals, print, sayDataDir, withExecutor } from '../cli-context.js';
import { localTimeWords } from '../time-words.js';

/** JSON from a file (or "-" for stdin), or a clear error saying which option. */
function readJson(source: string, option: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(source === '-' ? 0 : source, 'utf8');
  } catch (error) {
    throw new ExecutorError('INVALID_INPUT', `${option}: cannot read ${source}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ExecutorError('INVALID_INPUT', `${option}: ${source} is not JSON: ${(error as Error).message}`);
  }
}

function parseJsonText(text: string, option: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ExecutorError('INVALID_INPUT', `${option} is not JSON: ${(error as Error).message}`);
  }
}

function oneLine(skill: SkillRecord): string {
  const why = skill.reason ? ` — ${visibleLine(skill.reason)}` : '';
  const trial =
    skill.state === 'trial'
      ? ` (trial ${skill.trial.uses}/${skill.trial.required} uses${skill.trial.untilAt ? `, until ${localTimeWords(skill.trial.untilAt)}` : ''})`
      : '';
  return `${skill.skillId}  ${visibleLine(skill.name)} v${skill.version}  ${skill.state.toUpperCase()}${trial}${why}`;
}

function listText(skills: SkillRecord[], notices: RepetitionNotice[]): string {
  const lines = skills.length ? skills.map(oneLine) : ['No skills yet.'];
  for (const notice of notices)
    lines.push(
      `NOTICE: agent ${visibleLine(notice.agent)} ran the same code ${notice.times} times (last step ${notice.lastStepId}): ${notice.text} ` +
        `\`executor skills from-step ${notice.lastStepId} --name NAME\``,
    );
  return lines.join('\n');
}

/** Everything the person decides on: code, schemas, capabilities, budget, and what each example returned in quarantine. */
function showText(skill: SkillRecord): string {
  const lines = [
    oneLine(skill),
    `purpose: ${visibleLine(skill.purpose)}`,
    `proposed by: ${visibleLine(skill.proposedBy)}${skill.parentId ? `, an edit of ${skill.parentId}` : ''}${skill.fromStepId ? `, from step ${skill.fromStepId}` : ''}`,
    `code sha256: ${skill.codeHash}`,
    `capabilities: ${visibleJson(JSON.stringify(skill.capabilities))}`,
    `budget per use: ${skill.budget.timeMs} ms, ${skill.budget.calls} tool calls`,
    `input schema: ${visibleJson(JSON.stringify(skill.inputSchema))}`,
    `output schema: ${visibleJson(JSON.stringify(skill.outputSchema))}`,
    skill.pin
      ? `approved: ${localTimeWords(skill.pin.approvedAt)} by ${visibleLine(skill.pin.approvedBy)} (pins code ${skill.pin.codeHash})`
      : 'approved: no',
    'code (JavaScript, light sandbox; reads `input`, returns the output):',
    visibleBlock(skill.code),
    'examples in quarantine:',
    ...skill.exampleResults.map(
      (result, i) =>
        `  ${i + 1}. ${visibleJson(JSON.stringify(result.input) ?? 'null')} → ${[
          // An example that passed without being judged on data (RAN_WITHOUT_DATA, NETWORK_RECORDED) says why after what it returned.
          ...(result.ok && (result.code === undefined || result.output !== undefined)
            ? [visibleJson(JSON.stringify(result.output) ?? 'null')]
            : []),
          ...(result.code === undefined ? [] : [`${result.code}: ${visibleLine(result.message ?? '')}`]),
        ].join(' · ')} (${result.durationMs} ms, ${result.calls.length} calls)`,
    ),
  ];
  return lines.join('\n');
}

/** `executor skills …`: the person's side of skills (docs/skills.md). */
export function registerSkillCommands(program: Command): void {
  const skills = program
    .command('skills')
    .description(
      "agents' repeated code as pinned, owner-approved skills: list, show, approve, reject, edit, rollback, recheck, disable, from-step",
    );

  skills
    .command('list')
    .description('every skill version with its state (and why), and the repetition notices ("seen N times: save as a skill?")')
    .option('--state <state...>', `only these states (${SKILL_STATES.join(', ')})`)
    .action(async (options: { state?: string[] }, command: Command) => {
      const { dataDir, json } = globals(command);
      const bad = options.state?.find((state) => !(SKILL_STATES as readonly string[]).includes(state));
      if (bad) throw new ExecutorError('INVALID_INPUT', `--state ${bad} is not a skill state (${SKILL_STATES.join(', ')})`);
      const page = await withExecutor(dataDir, async (api, reach) => {
        await sayDataDir(command, reach);
        return api.listSkills(options.state ? { states: options.state as SkillRecord['state'][] } : {});
      });
      print(json, page, () => listText(page.skills, page.notices));
    });

  skills
    .command('show <skillId>')
    .description('one skill: its code, schemas, capabilities, budget, examples and their results, pin and trial')
    .action(async (skillId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const skill = await withExecutor(dataDir, (api) => api.getSkill({ skillId }));
      print(json, skill, () => showText(skill));
    });

  skills
    .command('approve <skillId>')
    .description('approve a skill awaiting you: pins its code hash and capabilities and starts its trial')
    .option('--code-hash <sha256>', 'refuse unless the code is the one with this hash (the one `skills show` printed)')
    .action(async (skillId: string, options: { codeHash?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const skill = await withExecutor(dataDir, (api) =>
        api.approveSkill(options.codeHash ? { skillId, codeHash: options.codeHash } : { skillId }),
      );
      print(json, skill, () => `Approved: ${oneLine(skill)}`);
    });

  skills
    .command('reject <skillId>')
    .description('reject a skill; a rejected skill never runs')
    .requiredOption('--reason <text>', 'why (kept with the skill and in the audit log)')
    .action(async (skillId: string, options: { reason: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const skill = await withExecutor(dataDir, (api) => api.rejectSkill({ skillId, reason: options.reason }));
      print(json, skill, () => `Rejected: ${oneLine(skill)}`);
    });

  skills
    .command('edit <skillId>')
    .description('your version of a skill: a new version that goes through quarantine and validation again')
    .option('--code-file <path>', 'the new code')
    .option(
      '--change <file>',
      'a JSON file (or - for stdin) of what changes: code, purpose, inputSchema, outputSchema, capabilities, budget, examples',
    )
    .action(async (skillId: string, options: { codeFile?: string; change?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const change: Record<string, unknown> = options.change ? { ...(readJson(options.change, '--change') as object) } : {};
      if (options.codeFile) change.code = fs.readFileSync(options.codeFile, 'utf8');
      if (!Object.keys(change).length) throw new ExecutorError('INVALID_INPUT', 'Say what changes: --code-file or --change.');
      const skill = await withExecutor(dataDir, (api) => api.editSkill({ skillId, change: change as never }));
      print(json, skill, () => `New version: ${oneLine(skill)}`);
    });

  skills
    .command('rollback <skillId>')
    .description('make an earlier, once-approved version usable again (a new trial); the current one is superseded')
    .action(async (skillId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const skill = await withExecutor(dataDir, (api) => api.rollbackSkill({ skillId }));
      print(json, skill, () => `Rolled back to: ${oneLine(skill)}`);
    });

  skills
    .command('recheck <skillId>')
    .description('check again a draft whose check the stop switch stopped: quarantine and validation from its first example')
    .action(async (skillId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const skill = await withExecutor(dataDir, (api) => api.recheckSkill({ skillId }));
      print(json, skill, () => `Checked again: ${oneLine(skill)}`);
    });

  skills
    .command('disable <skillId>')
    .description('disable a skill; no agent is offered it until you roll back to it')
    .option('--reason <text>', 'why')
    .action(async (skillId: string, options: { reason?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const skill = await withExecutor(dataDir, (api) =>
        api.disableSkill({ skillId, ...(options.reason ? { reason: options.reason } : {}) }),
      );
      print(json, skill, () => `Disabled: ${oneLine(skill)}`);
    });

  skills
    .command('from-step <stepId>')
    .description('"Save as skill": an executed runCode step\'s code proposed as a skill, through quarantine and validation')
    .requiredOption('--name <name>', 'the skill name (lowercase letters, digits, "_")')
    .option('--fields <file>', 'a JSON file of further fields: purpose, inputSchema, outputSchema, examples, capabilities, budget')
    .action(async (stepId: string, options: { name: string; fields?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const fields = { ...(options.fields ? (readJson(options.fields, '--fields') as object) : {}), name: options.name };
      const skill = await withExecutor(dataDir, (api) => api.skillFromStep({ stepId, fields }));
      print(json, skill, () => oneLine(skill));
    });

  skills
    .command('use <name>')
    .description('run a usable skill on an input, as an agent would (no prompt): one runSkill step, shown by `executor steps show`')
    .option('--input <json>', 'the input as JSON', '{}')
    .action(async (name: string, options: { input: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const input = parseJsonText(options.input, '--input');
      const result = await withExecutor(dataDir, (api) => api.useSkill({ name, input }));
      print(json, result, () =>
        result.ok
          ? visibleJson(JSON.stringify(result.output) ?? 'null')
          : `FAILED (${result.code}): ${visibleLine(result.message ?? '')}; the skill is now ${result.state}${result.reason ? ` (${visibleLine(result.reason)})` : ''}. Step ${result.stepId}`,
      );
    });
}
