import type { StepRecord } from '../src/domain/step-record.js';
export { commandTitle, displayPath, summarizeStep, targetPath } from '../src/domain/step-title.js';

export const STATUS_LABEL: Record<string, string> = {
  proposed: 'Proposed',
  evaluated: 'Evaluated',
  awaiting_consent: 'Waiting for you',
  approved: 'Approved',
  rejected: 'Rejected',
  running: 'Running',
  executed: 'Executed',
  failed: 'Failed',
  interrupted: 'Interrupted',
  reverted: 'Reverted',
  denied: 'Denied by policy',
  expired: 'Expired',
};

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function formatDuration(record: StepRecord): string {
  if (!record.startedAt || !record.finishedAt) return '—';
  const ms = new Date(record.finishedAt).getTime() - new Date(record.startedAt).getTime();
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function shortHash(hash: string | null | undefined): string {
  return hash ? `${hash.slice(0, 12)}…` : '—';
}

/** Who approved, in words: the policy, or a person through a channel. */
export function approverText(record: StepRecord): string {
  const by = record.approval?.by;
  if (!by) return '—';
  if (by.channel === 'policy') return 'policy (auto-approved)';
  return `${by.user} via ${by.channel}`;
}

/** Compact time for dense tables: "Nov 22, 03:10:56". */
/**
 * One formatter for every row: toLocaleString with options builds a new Intl.DateTimeFormat per call,
 * which cost more than the rest of an audit row's render together while scrolling.
 */
let shortTimeFormat: Intl.DateTimeFormat | undefined;

export function formatShortTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  shortTimeFormat ??= new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  return shortTimeFormat.format(date);
}
