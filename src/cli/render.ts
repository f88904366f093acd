import { editDetailText } from '../domain/person-edit.js';
import { splitReason } from '../domain/reason-detail.js';
import type { ErrorShape } from '../domain/errors.js';
import type { LiveRunView, TailChunk } from '../domain/live-output.js';
import { noPreviewWhy, type ExecutionChoice, type RunSpan, type StepRecord } from '../domain/step-record.js';
import { boundAction } from '../actions/registry.js';
import {
  capabilityAsks,
  codeLanguageName,
  codeSandboxOf,
  codeTimeoutWords,
  commandTimeoutWords,
  durationText,
  lineCountText,
  NO_CAPABILITY_WORDS,
  SANDBOX_WORDS,
  type RunTimeLimits,
} from '../domain/run-step-facts.js';
import { commandLineOf, quoteShellWord } from '../domain/shell-quote.js';
import type { Step } from '../domain/step.js';
import { visibleBlock, visibleLine as line } from '../domain/visible-text.js';
import { asSentence, withReason } from '../domain/sentence-text.js';
import { statusWords } from '../domain/status-words.js';
import { CONTENT_LOST_LABEL, contentLostWords } from '../domain/content-lost.js';
import { resultWords } from '../domain/result-words.js';
import { localTimeSpanWords, localTimeWords } from './time-words.js';

/*
 * Every string here that came from a step or an agent (ids, paths, commands, purposes, reasons,
 * output, diffs, names, error messages) passes through `line` (one line: newlines escaped too) or
 * `block` (multi-line text: newlines and tabs kept). Nothing in it can move the cursor, erase a
 * line, retitle the terminal or reorder what the person reads. print() escapes once more as a last guard.
 */

/** A block indented under a label: its own newlines cannot start a line that looks like one of ours. */
const indented = (text: string, prefix: string) => visibleBlock(text).split('\n').join(`\n${prefix}`);

/** One result per step, as `propose --wait` and scripts read it. */
export interface StepOutcome {
  stepId: string;
  status: string;
  risk: string | null;
  reasons: string[];
  result?: Record<string, unknown>;
  error?: ErrorShape;
  rejectedReason?: string;
  blockedBy?: StepRecord['blockedBy'];
  consentExpiresAt?: string;
  contentLost?: StepRecord['contentLost'];
}

export function outcomeOf(record: StepRecord): StepOutcome {
  return {
    stepId: record.step.id,
    status: record.status,
    risk: record.evaluation?.risk ?? null,
    reasons: record.evaluation?.reasons ?? [],
    ...(record.result ? { result: record.result } : {}),
    ...(record.error ? { error: record.error } : {}),
    ...(record.rejectedReason ? { rejectedReason: record.rejectedReason } : {}),
    ...(record.blockedBy ? { blockedBy: record.blockedBy } : {}),
    ...(record.consentExpiresAt ? { consentExpiresAt: record.consentExpiresAt } : {}),
    ...(record.contentLost ? { contentLost: record.contentLost } : {}),
  };
}

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * Which steps of a plan wait, and for whom, once nothing more happens by itself: '' when none does.
 * `reach` says where the person decides: with a host, in its window too.
 */
export function whoMustAct(records: StepRecord[], reach: 'host' | 'direct'): string {
  const ids = (list: StepRecord[]) => list.map((record) => line(record.step.id)).join(', ');
  const deciding = records.filter((record) => record.status === 'awaiting_consent');
  const behind = records.filter((record) => record.status === 'approved');
  const preparing = records.filter((record) => ['proposed', 'evaluated', 'running'].includes(record.status));
  const lines: string[] = [];
  if (deciding.length) {
    const where = reach === 'host' ? 'in the window, or with' : 'with';
    lines.push(
      `${count(deciding.length, 'step waits', 'steps wait')} for your decision ${where} \`executor steps show ID\`, then \`executor approve ID\` or \`executor reject ID --reason …\`: ${ids(deciding)}.`,
    );
  }
  if (behind.length)
    lines.push(`${count(behind.length, 'approved step waits', 'approved steps wait')} for an earlier step of the plan: ${ids(behind)}.`);
  if (preparing.length)
    lines.push(
      `${count(preparing.length, 'step is', 'steps are')} still being prepared or running in the host (stopped waiting): ${ids(preparing)}; \`executor steps list --plan ${line(records[0]!.step.planId)}\` shows where they are.`,
    );
  const expiry = deciding
    .concat(behind)
    .map((record) => record.consentExpiresAt)
    .filter((at): at is string => at !== undefined)
    .sort()[0];
  if (expiry && lines.length) lines.push(`Undecided steps expire from ${localTimeWords(expiry)} on.`);
  return lines.join('\n');
}

/** The preview hash as `steps show` prints it and `approve --preview-hash` takes it: "none" when the step has no preview. */
export function previewHashText(record: StepRecord): string {
  return record.previewHash ?? 'none';
}

/** The step in a few words; a write whose content is lost does not claim to write 0 bytes. */
function actionWords(record: StepRecord, summarize: () => string): string {
  return record.contentLost && record.step.action === 'writeFile' ? `Write ${record.step.args.path} (its content is lost)` : summarize();
}

export function summaryLine(record: StepRecord): string {
  const { module, args } = boundAction(record.step);
  const risk = record.evaluation?.risk ?? '-';
  const proposer = record.step.meta.origin === 'agent' ? `  [agent: ${line(record.step.meta.client ?? 'unnamed')}]` : '';
  const preview = record.status === 'awaiting_consent' ? `  preview ${previewHashText(record)}` : '';
  const blocked = record.blockedBy
    ? `  blocked by ${line(record.blockedBy.stepId)} (${statusWords(record.blockedBy.status).toLowerCase()})`
    : '';
  const lost = record.contentLost
    ? `  ${CONTENT_LOST_LABEL.toUpperCase()} (${record.contentLost.blob === null ? 'body' : 'blob'} ${record.contentLost.why})`
    : '';
  // The status in the window's words ("Waiting for you"), not its state name: `--json` keeps the name.
  return `${line(record.step.id)}  ${statusWords(record.status).padEnd(16)} ${risk.padEnd(8)} ${line(actionWords(record, () => module.summarize(args)))}${proposer}${preview}${blocked}${lost}`;
}

/** A time limit in words; without the policy's limits (not readable), what the step asked for. */
function timeText(requestedMs: number | undefined, words: (limits: RunTimeLimits) => string, limits: RunTimeLimits | undefined): string {
  if (limits) return words(limits);
  return requestedMs === undefined ? "the policy's default" : `${durationText(requestedMs)}, as far as the policy allows`;
}

/**
 * What a runCommand or runCode step will run, as the window shows it: the command line (argv quoted
 * as a shell would need it) and where, how long and with what it runs; for code its language,
 * sandbox, time limit, every capability it asks for, and then the code itself, line by numbered line.
 * Nothing for other steps.
 */
export function whatRunsLines(step: Step, limits: RunTimeLimits | undefined): { facts: string[]; code: string[] } {
  if (step.action === 'runCommand') {
    const args = step.args;
    const facts = [
      `Command  ${indented(commandLineOf(args), '         ')}`,
      `         (${args.command !== undefined ? 'run by sh -c inside the container' : 'run directly, without a shell; quoted as a shell would need it'})`,
      `In       ${line(args.cwd ?? 'the first workspace root')} (a copy, in the Docker sandbox); network ${args.network === 'allowlist' ? "only to the policy's allowlist" : 'off'}`,
      `Timeout  ${line(timeText(args.timeoutMs, (given) => commandTimeoutWords(args, given), limits))}`,
    ];
    for (const [name, value] of Object.entries(args.env ?? {})) facts.push(`Env      ${line(`${name}=${quoteShellWord(value)}`)}`);
    if (args.allowSecrets?.length) facts.push(`Secrets  it may see ${args.allowSecrets.map(line).join(', ')}`);
    return { facts, code: [] };
  }
  if (step.action === 'runCode') {
    const args = step.args;
    const sandbox = SANDBOX_WORDS[codeSandboxOf(args)];
    const asks = capabilityAsks(args.capabilities);
    const facts = [
      `Code     ${codeLanguageName(args)} in the ${sandbox.name}: ${sandbox.isolation}`,
      `Timeout  ${line(timeText(args.timeoutMs, (given) => codeTimeoutWords(args, given), limits))}`,
      ...(asks.length === 0
        ? [`Asks for ${NO_CAPABILITY_WORDS.toLowerCase()}`]
        : asks.map((ask, index) => `${index === 0 ? 'Asks for' : '        '} - ${line(ask.words)}`)),
    ];
    const codeLines = args.code.replace(/\n$/, '').split('\n');
    const width = String(codeLines.length).length;
    const code = [
      `--- code (${codeLanguageName(args)}, ${lineCountText(args.code)}, ${new TextEncoder().encode(args.code).length} bytes)`,
      // Each line numbered: an escaped character cannot pose as a line break, and a reader can say "line 12".
      ...codeLines.map((text, index) => `${String(index + 1).padStart(Math.max(4, width + 1))} | ${visibleBlock(text)}`),
    ];
    return { facts, code };
  }
  if (step.action === 'runSkill') {
    const args = step.args;
    const input = JSON.stringify(args.input) ?? 'null';
    return {
      facts: [
        `Skill    ${line(args.skill)} v${args.version} (${line(args.skillId)}), code sha256 ${line(args.codeHash)}`,
        `Input    ${line(input.length > 500 ? `${input.slice(0, 500)}… (${input.length} characters)` : input)}`,
      ],
      code: [],
    };
  }
  return { facts: [], code: [] };
}

/** Each hunk header of a diff with its number, the one `executor approve ID --hunks 1,3` takes. */
function numberHunks(diff: string): string {
  let number = 0;
  return diff.replace(/^@@ [^\n]*@@/gm, (header) => `${header}  [hunk ${++number}]`);
}

export function detailText(record: StepRecord, limits?: RunTimeLimits): string {
  const { module, args } = boundAction(record.step);
  const meta = record.step.meta;
  const runs = whatRunsLines(record.step, limits);
  const lines = [
    `Step     ${line(record.step.id)} (plan ${line(record.step.planId)}, position ${record.position + 1})`,
    `Action   ${line(actionWords(record, () => module.summarize(args)))}`,
    ...runs.facts,
    `Status   ${statusWords(record.status)}${record.contentLost ? ` — ${CONTENT_LOST_LABEL.toLowerCase()}` : ''}`,
    ...(record.contentLost ? [`Content  LOST: ${contentLostWords(record.contentLost, record.status)}`] : []),
    `Origin   ${meta.origin}${meta.client ? ` (${line(meta.client)})` : ''}${meta.agent ? ` [${line(meta.agent)}]` : ''}`,
  ];
  if (meta.purpose) lines.push(`Purpose  ${line(meta.purpose)}`);
  if (record.evaluation) {
    lines.push(`Risk     ${record.evaluation.risk} — consent: ${record.evaluation.consent}`);
    for (const reason of record.evaluation.reasons) {
      // The consequence on the reason's line, how the analysis knows on the next.
      const { headline, detail } = splitReason(reason);
      lines.push(`  reason:     ${line(headline)}`);
      if (detail !== null) lines.push(`              in detail: ${line(detail)}`);
    }
    for (const mitigation of record.evaluation.mitigations) lines.push(`  mitigation: ${line(mitigation)}`);
  }
  lines.push(`Revert   ${module.reversible ? 'possible (exact backups are kept)' : 'NOT possible: this step cannot be undone'}`);
  // What `executor approve ID --preview-hash H` binds to: the approval is refused if the preview changes after this was printed.
  lines.push(
    `Preview  ${previewHashText(record)}${noPreviewWhy(record) ? ` (no dry run could be made: ${line(noPreviewWhy(record)!)})` : ''}`,
  );
  const skillPin = record.evaluation?.approvedBySkill;
  if (record.approval && skillPin)
    lines.push(
      `Approved ${localTimeWords(record.approval.at)} by the pin of skill ${line(skillPin.name)} v${skillPin.version} (${line(skillPin.skillId)}, code sha256 ${line(skillPin.codeHash.slice(0, 12))}…), which ${line(skillPin.approvedBy)} approved ${localTimeWords(skillPin.approvedAt)}`,
    );
  else if (record.approval)
    lines.push(
      `Approved ${localTimeWords(record.approval.at)} by ${line(record.approval.by.user)} via ${record.approval.by.channel}${record.edit && record.edit.kind === 'hunks' ? ' with edits' : ''}`,
    );
  if (record.edit)
    lines.push(
      `Edited   version ${record.edit.version}, by ${line(record.edit.by.user)} via ${record.edit.by.channel} at ${localTimeWords(record.edit.at)} (the proposal ${line(record.edit.proposedStepHash.slice(0, 12))}… is superseded)`,
      ...visibleBlock(editDetailText(record.edit, undefined, record.approval !== null, 'person'))
        .split('\n')
        .map((text) => `  ${text}`),
    );
  if (record.blockedBy)
    lines.push(
      `Blocked  by step ${line(record.blockedBy.stepId)} (${statusWords(record.blockedBy.status).toLowerCase()}): ${line(record.blockedBy.reason)}`,
    );
  if (record.consentExpiresAt)
    lines.push(
      `Expires  ${localTimeWords(record.consentExpiresAt)} (${record.status === 'approved' ? 'an approval not used by then is spent' : 'undecided by then, it expires'})`,
    );
  if (record.rejectedReason) lines.push(`Rejected ${line(record.rejectedReason)}`);
  const partialOutput = record.status === 'cancelled' ? partialOutputOf(record.result) : null;
  const execution = executionChoiceOf(record.result);
  if (execution) lines.push(`Ran      ${line(execution.summary)}`);
  // The result in the words `steps list` and History use; its output and files below; `--json` keeps the result whole.
  if (record.result && !partialOutput) lines.push(`Result   ${line(resultWords(record))}`);
  if (record.error) lines.push(`Error    ${line(record.error.code)}: ${line(record.error.message)}`);
  for (const [name, span] of [
    ['Dry run', record.runTimes?.dryRun],
    ['Run', record.runTimes?.realRun],
  ] as const) {
    // The host's wall clock (the duration History and `steps list` say); the sandbox's own count of the command, if the result has one, is named as such.
    const inSandbox =
      name === 'Run' && typeof record.result?.durationMs === 'number'
        ? `; the command itself ${durationText(record.result.durationMs)} in its sandbox`
        : '';
    if (span)
      lines.push(
        `${name.padEnd(8)} ${durationText(span.durationMs)} (${localTimeSpanWords(span.startedAt, span.finishedAt)}, host's clock${inSandbox})${span.ended === 'finished' ? '' : `, ${span.ended}`}`,
      );
  }
  if (runs.code.length) lines.push('', ...runs.code);
  if (record.preview?.kind === 'fileChanges') {
    for (const file of record.preview.files) {
      lines.push(
        '',
        `--- preview of ${line(file.path)} (${file.existedBefore ? `${file.sizeBefore} bytes` : 'new file'} → ${file.existsAfter ? `${file.sizeAfter} bytes` : 'deleted'})`,
      );
      lines.push(file.diff !== null ? visibleBlock(numberHunks(file.diff)) : `(${line(file.diffOmittedReason ?? 'no diff')})`);
    }
  } else if (record.preview?.kind === 'commandRun') {
    const run = record.preview;
    const ended = run.timedOut ? 'timed out' : run.oomKilled ? `killed at the memory limit (exit ${run.exitCode})` : `exit ${run.exitCode}`;
    lines.push(
      '',
      `--- dry run (the preview, in a scratch copy; not the real run) of \`${line(run.command)}\` in ${line(run.cwd)}: ${ended}, network ${line(run.network)}, image ${line(run.image.digest)}`,
    );
    if (run.planBasis?.length)
      lines.push(
        `ran after the plan's earlier step(s) ${run.planBasis.map((basis) => line(basis.stepId)).join(', ')} (their changes laid over the copy)`,
      );
    if (run.rebuilt) lines.push(`rebuilt: ${line(run.rebuilt.reason)}`);
    lines.push(
      run.dryRun
        ? 'bound: approving applies this dry run as it is, unless its files, image, arguments or environment change first'
        : 'not bound: approving runs the command again',
    );
    for (const [name, stream] of [
      ['stdout', run.stdout],
      ['stderr', run.stderr],
    ] as const) {
      if (stream.bytes > 0)
        lines.push(`${name} (${stream.bytes} bytes${stream.truncated ? ', truncated' : ''}):`, ...guttered(stream.text));
    }
    for (const request of run.egress)
      lines.push(`network: ${line(request.method)} ${line(request.host)}:${request.port} ${request.allowed ? 'allowed' : 'refused'}`);
    if (run.conflicts.length) lines.push(`conflicts: ${run.conflicts.map(line).join(', ')} changed in the workspace while the command ran`);
    for (const skipped of run.skipped)
      lines.push(
        `${skipped.blocksChangeset ? 'REFUSED, nothing will be applied' : 'not carried back'}: ${line(skipped.path)} (${line(skipped.reason)})`,
      );
    if (run.files.length === 0) lines.push('No file changes.');
    for (const file of run.files) {
      const mode = file.modeAfter !== undefined ? `, mode ${file.modeBefore?.toString(8) ?? '-'} → ${file.modeAfter?.toString(8)}` : '';
      lines.push(
        '',
        `--- preview of ${line(file.path)} (${file.existedBefore ? `${file.sizeBefore} bytes` : 'new file'} → ${file.existsAfter ? `${file.sizeAfter} bytes` : 'deleted'}${mode})`,
      );
      for (const note of file.dropped ?? []) lines.push(`(${line(note)})`);
      lines.push(file.diff !== null ? visibleBlock(file.diff) : `(${line(file.diffOmittedReason ?? 'no diff')})`);
    }
  } else if (record.preview?.kind === 'url') {
    const preview = record.preview;
    lines.push('', `--- opens ${line(preview.protocol)}//${line(preview.host)}${line(preview.path)}`);
    for (const param of preview.query)
      lines.push(`  ?${line(param.name)} = ${line(param.value)}${param.opaque ? '   <-- long opaque value' : ''}`);
    if (preview.fragment) lines.push(`  #${line(preview.fragment)}`);
    for (const warning of preview.warnings) lines.push(`  warning: ${line(warning)}`);
  } else if (record.preview?.kind === 'kbEntry') {
    lines.push(
      '',
      `--- knowledge-base entry "${line(record.preview.title)}" [${record.preview.tags.map(line).join(', ')}]`,
      visibleBlock(record.preview.content),
    );
  } else if (record.preview?.kind === 'codeRun') {
    const dry = record.preview.result;
    lines.push('', '--- dry run of the code');
    for (const request of record.preview.requests) lines.push(`would request: ${line(request.method)} ${line(request.url)}`);
    lines.push(...dry.logs.map((entry) => `log: ${indented(entry, '     ')}`));
    lines.push(dry.ok ? `value: ${line(JSON.stringify(dry.value) ?? 'undefined')}` : `${line(dry.code)}: ${line(dry.message)}`);
  } else if (record.preview?.kind === 'text') {
    lines.push('', '--- preview', visibleBlock(record.preview.text));
  } else if (!record.preview && record.previewError) {
    // In full (a build's own error and its log's last lines): the person decides on this step without a dry run.
    lines.push('', '--- why no dry run could be made', visibleBlock(record.previewError));
  }
  if (partialOutput) {
    // The real run's output up to the cancel: after the dry run's, so the preview is not read as what the real run did.
    lines.push(
      '',
      `--- the real run's output before it was cancelled (stdout ${partialOutput.bytes.stdout} bytes, stderr ${partialOutput.bytes.stderr} bytes${partialOutput.truncated ? '; only the last part was kept' : ''}):`,
    );
    if (partialOutput.stdout) lines.push('stdout:', visibleBlock(partialOutput.stdout.replace(/\n$/, '')));
    if (partialOutput.stderr) lines.push('stderr:', visibleBlock(partialOutput.stderr.replace(/\n$/, '')));
    if (!partialOutput.stdout && !partialOutput.stderr) lines.push('(it printed nothing)');
  }
  if (!partialOutput) lines.push(...realRunLines(record.result));
  lines.push(...keptRunOutputLines(record, partialOutput !== null));
  return lines.join('\n');
}

/** What a command's real run printed and which files it changed, from its result (the preview above is the dry run's). */
function realRunLines(result: Record<string, unknown> | null): string[] {
  if (!result || typeof result.exitCode !== 'number') return [];
  const lines: string[] = [];
  const files = Array.isArray(result.files) ? (result.files as { path?: unknown; change?: unknown }[]) : [];
  if (files.length)
    lines.push('', '--- files the real run changed', ...files.map((file) => `  ${line(String(file.path))} (${line(String(file.change))})`));
  for (const name of ['stdout', 'stderr'] as const) {
    const stream = result[name] as { text?: unknown; truncated?: unknown } | undefined;
    const text = typeof stream?.text === 'string' ? stream.text : '';
    if (text)
      lines.push(
        '',
        `--- ${name} of the real run${stream?.truncated === true ? ' (only its end was kept)' : ''}`,
        visibleBlock(text.replace(/\n$/, '')),
      );
  }
  return lines;
}

const SPAN_ENDINGS: Record<RunSpan['ended'], string> = {
  finished: 'it finished',
  failed: 'it failed',
  cancelled: 'it was cancelled',
  interrupted: 'the host stopped mid-run',
};

/**
 * The output a run printed before it stopped without finishing (cancelled, failed, cut off by a
 * shutdown), kept with its run span: the same partial output the window's History shows.
 */
function keptRunOutputLines(record: StepRecord, realRunShown: boolean): string[] {
  const lines: string[] = [];
  for (const [phase, span] of [
    ['dry run', record.runTimes?.dryRun],
    ['real run', record.runTimes?.realRun],
  ] as const) {
    const output = span?.output;
    if (!span || !output || (phase === 'real run' && realRunShown)) continue;
    lines.push(
      '',
      `--- output of its ${phase}, partial: ${SPAN_ENDINGS[span.ended]} (stdout ${output.bytes.stdout} bytes, stderr ${output.bytes.stderr} bytes${output.truncated ? '; only the last part was kept' : ''}):`,
    );
    // As it printed, stderr lines marked where they came (as `steps watch` shows them live); older records kept only the split.
    if (output.inOrder && output.inOrder.length > 0) lines.push(...tailLines(output.inOrder));
    else {
      if (output.stdout) lines.push('stdout:', visibleBlock(output.stdout.replace(/\n$/, '')));
      if (output.stderr) lines.push('stderr:', visibleBlock(output.stderr.replace(/\n$/, '')));
    }
    if (!output.stdout && !output.stderr) lines.push('(it printed nothing)');
  }
  return lines;
}

/** A cancelled real run's partial output (Executor's cancel keeps it as the step's result), or null. */
function partialOutputOf(
  result: Record<string, unknown> | null,
): { stdout: string; stderr: string; bytes: { stdout: number; stderr: number }; truncated: boolean } | null {
  const partial = result?.partialOutput as
    { stdout?: unknown; stderr?: unknown; bytes?: { stdout?: unknown; stderr?: unknown }; truncated?: unknown } | undefined;
  if (!partial || typeof partial !== 'object') return null;
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  const count = (value: unknown) => (typeof value === 'number' ? value : 0);
  return {
    stdout: text(partial.stdout),
    stderr: text(partial.stderr),
    bytes: { stdout: count(partial.bytes?.stdout), stderr: count(partial.bytes?.stderr) },
    truncated: partial.truncated === true,
  };
}

/** A run under way as `steps show` and `steps watch` print it: phase, elapsed time, then the tail of its output (stderr lines marked). */
export function liveRunText(run: LiveRunView, now = Date.now()): string {
  const head = `${run.phase === 'dryRun' ? 'Dry run' : 'Running'} for ${durationText(now - Date.parse(run.startedAt))}${run.cancelling ? ' (cancelling)' : ''}: ${line(run.title)}`;
  const printed = run.bytes.stdout + run.bytes.stderr;
  return [head, printed === 0 ? '(no output yet)' : `--- last lines of its output (${printed} bytes so far)`, ...tailLines(run.tail)].join(
    '\n',
  );
}

/** Output chunks as lines for a terminal: escaped, stderr's prefixed so they stand apart. */
/**
 * What the command printed, each line behind a gutter: the text is the agent's command's, and at the left margin it could
 * pass for Executor's own lines (a fake `--- preview of …` or diff before the real one, in `steps show` and the inline prompt).
 */
function guttered(text: string): string[] {
  return visibleBlock(text.replace(/\n$/, ''))
    .split('\n')
    .map((outputLine) => `  │ ${outputLine}`);
}

export function tailLines(tail: readonly TailChunk[]): string[] {
  return tail.flatMap((chunk) =>
    visibleBlock(chunk.text.replace(/\n$/, ''))
      .split('\n')
      .map((text) => (chunk.stream === 'stderr' ? `stderr| ${text}` : text)),
  );
}

/**
 * Why a step did not simply run: the sentence a person needs next, or '' when it executed. A reason
 * (the person's, the policy's, an error's) ends the sentence with its own stop, never a second one.
 */
export function explainOutcome(record: StepRecord): string {
  const id = line(record.step.id);
  // Reasons are flattened to one line before they are made visible: a line break in a reason reads as a space.
  const said = (lead: string, reason: string | null | undefined) => `${id}: ${line(withReason(lead, reason))}`;
  switch (record.status) {
    case 'denied':
      return said('denied by policy', record.evaluation?.reasons.map(asSentence).filter(Boolean).join(' '));
    case 'rejected':
      return said('rejected', record.rejectedReason ?? 'no reason given');
    case 'failed':
    case 'interrupted':
      return said(
        `${record.status === 'failed' ? 'failed' : 'interrupted'}${record.error ? ` (${record.error.code})` : ''}`,
        record.error?.message,
      );
    case 'expired':
      return said('expired', record.error?.message ?? 'nobody decided it in time');
    case 'cancelled':
      return said('cancelled', record.error?.message ?? 'stopped while it ran');
    case 'awaiting_consent':
      // The blocker is a sentence of its own after the commands: joined in front of ": `executor …`" it read "…for a decision.: `executor …`".
      return `${id}: waiting for consent (${record.evaluation?.risk ?? '?'}): \`executor steps show ${id}\`, then \`executor approve ${id}\` (with \`--preview-hash\` and the hash it printed, from a script) or \`executor reject ${id} --reason …\`.${record.blockedBy && asSentence(record.blockedBy.reason) ? ` ${line(asSentence(record.blockedBy.reason))}` : ''}`;
    case 'approved':
      return `${id}: approved, waits: ${line(asSentence(record.blockedBy?.reason ?? '') || 'an earlier step of its plan runs first.')}`;
    case 'proposed':
    case 'evaluated':
      return `${id}: being prepared (its preview is not ready yet).`;
    default:
      return '';
  }
}

/** How an executed step was carried out (its result's `execution`), when it says. */
function executionChoiceOf(result: Record<string, unknown> | null): ExecutionChoice | null {
  const execution = result?.execution as ExecutionChoice | undefined;
  return execution && typeof execution.summary === 'string' ? execution : null;
}
