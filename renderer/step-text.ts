import type { StepRecord } from '../src/domain/step-record.js';
import type { Step } from '../src/domain/step.js';

/** One line per step for lists, in words. The renderer cannot load the action modules (they read files), so it says it here. */
export function summarizeStep(step: Step): string {
  const args = step.args as Record<string, unknown>;
  switch (step.action) {
    case 'writeFile':
      return `Write ${String(args.path)}`;
    case 'deleteFile':
      return `Delete ${String(args.path)}`;
    case 'createKBEntry':
      return `Add knowledge-base entry “${String(args.title)}”`;
    default: {
      const generic = step as { action: string; args: Record<string, unknown> };
      if (typeof generic.args.url === 'string') return `Open ${generic.args.url}`;
      if (typeof generic.args.command === 'string') return `Run ${generic.args.command}`;
      return generic.action;
    }
  }
}

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
