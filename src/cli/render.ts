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
  return `${record.step.id}  ${record.status.padEnd(16)} ${risk.padEnd(8)} ${module.summarize(args)}`;
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
  } else if (record.preview?.kind === 'url') {
    const preview = record.preview;
    lines.push('', `--- opens ${preview.protocol}//${preview.host}${preview.path}`);
    for (const param of preview.query) lines.push(`  ?${param.name} = ${param.value}${param.opaque ? '   <-- long opaque value' : ''}`);
    if (preview.fragment) lines.push(`  #${preview.fragment}`);
    for (const warning of preview.warnings) lines.push(`  warning: ${warning}`);
  } else if (record.preview?.kind === 'kbEntry') {
    lines.push('', `--- knowledge-base entry "${record.preview.title}" [${record.preview.tags.join(', ')}]`, record.preview.content);
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
