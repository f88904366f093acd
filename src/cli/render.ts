import type { ErrorShape } from '../domain/errors.js';
import type { StepRecord } from '../domain/step-record.js';
import { boundAction } from '../actions/registry.js';

/** One result per step, as `propose --wait` and scripts read it. */
export interface StepOutcome {
  stepId: string;
  status: string;
  risk: string | null;
  reasons: string[];
  result?: Record<string, unknown>;
  error?: ErrorShape;
  rejectedReason?: string;
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
  };
}

export function summaryLine(record: StepRecord): string {
  const { module, args } = boundAction(record.step);
  const risk = record.evaluation?.risk ?? '-';
  const proposer = record.step.meta.origin === 'agent' ? `  [agent: ${record.step.meta.client ?? 'unnamed'}]` : '';
  return `${record.step.id}  ${record.status.padEnd(16)} ${risk.padEnd(8)} ${module.summarize(args)}${proposer}`;
}

export function detailText(record: StepRecord): string {
  const { module, args } = boundAction(record.step);
  const lines = [
    `Step     ${record.step.id} (plan ${record.step.planId}, position ${record.position + 1})`,
    `Action   ${module.summarize(args)}`,
    `Status   ${record.status}`,
    `Origin   ${record.step.meta.origin}${record.step.meta.client ? ` (${record.step.meta.client})` : ''}`,
  ];
  if (record.step.meta.purpose) lines.push(`Purpose  ${record.step.meta.purpose}`);
  if (record.evaluation) {
    lines.push(`Risk     ${record.evaluation.risk} — consent: ${record.evaluation.consent}`);
    for (const reason of record.evaluation.reasons) lines.push(`  reason:     ${reason}`);
    for (const mitigation of record.evaluation.mitigations) lines.push(`  mitigation: ${mitigation}`);
  }
  lines.push(`Revert   ${module.reversible ? 'possible (exact backups are kept)' : 'NOT possible: this step cannot be undone'}`);
  if (record.approval) lines.push(`Approved ${record.approval.at} by ${record.approval.by.user} via ${record.approval.by.channel}`);
  if (record.rejectedReason) lines.push(`Rejected ${record.rejectedReason}`);
  if (record.result) lines.push(`Result   ${JSON.stringify(record.result)}`);
  if (record.error) lines.push(`Error    ${record.error.code}: ${record.error.message}`);
  if (record.preview?.kind === 'fileChanges') {
    for (const file of record.preview.files) {
      lines.push('', `--- preview of ${file.path} (${file.existedBefore ? `${file.sizeBefore} bytes` : 'new file'} → ${file.existsAfter ? `${file.sizeAfter} bytes` : 'deleted'})`);
      lines.push(file.diff ?? `(${file.diffOmittedReason ?? 'no diff'})`);
    }
  } else if (record.preview?.kind === 'commandRun') {
    const run = record.preview;
    const ended = run.timedOut ? 'timed out' : run.oomKilled ? `killed at the memory limit (exit ${run.exitCode})` : `exit ${run.exitCode}`;
    lines.push('', `--- sandbox run of \`${run.command}\` in ${run.cwd}: ${ended}, network ${run.network}, image ${run.image.digest}`);
    for (const [name, stream] of [['stdout', run.stdout], ['stderr', run.stderr]] as const) {
      if (stream.bytes > 0) lines.push(`${name} (${stream.bytes} bytes${stream.truncated ? ', truncated' : ''}):`, stream.text.replace(/\n$/, ''));
    }
    for (const request of run.egress) lines.push(`network: ${request.method} ${request.host}:${request.port} ${request.allowed ? 'allowed' : 'refused'}`);
    if (run.conflicts.length) lines.push(`conflicts: ${run.conflicts.join(', ')} changed in the workspace while the command ran`);
    for (const skipped of run.skipped) lines.push(`${skipped.blocksChangeset ? 'REFUSED, nothing will be applied' : 'not carried back'}: ${skipped.path} (${skipped.reason})`);
    if (run.files.length === 0) lines.push('No file changes.');
    for (const file of run.files) {
      const mode = file.modeAfter !== undefined ? `, mode ${file.modeBefore?.toString(8) ?? '-'} → ${file.modeAfter?.toString(8)}` : '';
      lines.push('', `--- preview of ${file.path} (${file.existedBefore ? `${file.sizeBefore} bytes` : 'new file'} → ${file.existsAfter ? `${file.sizeAfter} bytes` : 'deleted'}${mode})`);
      for (const note of file.dropped ?? []) lines.push(`(${note})`);
      lines.push(file.diff ?? `(${file.diffOmittedReason ?? 'no diff'})`);
    }
  } else if (record.preview?.kind === 'url') {
    const preview = record.preview;
    lines.push('', `--- opens ${preview.protocol}//${preview.host}${preview.path}`);
    for (const param of preview.query) lines.push(`  ?${param.name} = ${param.value}${param.opaque ? '   <-- long opaque value' : ''}`);
    if (preview.fragment) lines.push(`  #${preview.fragment}`);
    for (const warning of preview.warnings) lines.push(`  warning: ${warning}`);
  } else if (record.preview?.kind === 'kbEntry') {
    lines.push('', `--- knowledge-base entry "${record.preview.title}" [${record.preview.tags.join(', ')}]`, record.preview.content);
  } else if (record.preview?.kind === 'codeRun') {
    const dry = record.preview.result;
    lines.push('', '--- dry run of the code');
    for (const request of record.preview.requests) lines.push(`would request: ${request.method} ${request.url}`);
    lines.push(...dry.logs.map((line) => `log: ${line}`));
    lines.push(dry.ok ? `value: ${JSON.stringify(dry.value)}` : `${dry.code}: ${dry.message}`);
  }
  return lines.join('\n');
}

/** Why a step did not simply run: the sentence a person needs next, or '' when it executed. */
export function explainOutcome(record: StepRecord): string {
  const id = record.step.id;
  switch (record.status) {
    case 'denied':
      return `${id}: denied by policy: ${record.evaluation?.reasons.join(' ') ?? ''}`;
    case 'rejected':
      return `${id}: rejected: ${record.rejectedReason ?? ''}`;
    case 'failed':
    case 'interrupted':
      return `${id}: ${record.status}: ${record.error ? `${record.error.code}: ${record.error.message}` : ''}`;
    case 'awaiting_consent':
      return `${id}: waiting for consent (${record.evaluation?.risk ?? '?'}): \`executor steps show ${id}\`, then \`executor approve ${id}\` or \`executor reject ${id} --reason …\``;
    case 'approved':
      return `${id}: approved, waits for an earlier step of its plan`;
    default:
      return '';
  }
}
