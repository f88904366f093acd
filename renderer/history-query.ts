import type { StepStatus } from '../src/domain/state-machine.js';

/*
 * History's filters, kept in the URL hash (#history?status=failed&agent=cursor&plan=p-1&q=npm) so a
 * refresh, a bookmark or a link shows the same rows. The host does the filtering (listStepSummaries).
 */

export const HISTORY_STATUSES = [
  'executed',
  'failed',
  'interrupted',
  'reverted',
  'rejected',
  'denied',
  'expired',
  'cancelled',
] as const satisfies readonly StepStatus[];
export type HistoryStatus = (typeof HISTORY_STATUSES)[number];

export interface HistoryFilter {
  status: HistoryStatus | '';
  /** An agent's label; "" all; "\u0000you" the person's own steps. */
  agent: string;
  plan: string;
  text: string;
}

export const YOU = '\u0000you';

export function filterFromHash(hash: string): HistoryFilter {
  const query = hash.replace(/^#\/?/, '').split('?')[1] ?? '';
  const params = new URLSearchParams(query);
  const status = params.get('status') ?? '';
  return {
    status: (HISTORY_STATUSES as readonly string[]).includes(status) ? (status as HistoryStatus) : '',
    agent: params.get('you') === '1' ? YOU : (params.get('agent') ?? '').slice(0, 200),
    plan: (params.get('plan') ?? '').slice(0, 128),
    text: (params.get('q') ?? '').slice(0, 200),
  };
}

export function hashForFilter(filter: HistoryFilter): string {
  const params = new URLSearchParams();
  if (filter.status) params.set('status', filter.status);
  if (filter.agent === YOU) params.set('you', '1');
  else if (filter.agent) params.set('agent', filter.agent);
  if (filter.plan) params.set('plan', filter.plan);
  if (filter.text) params.set('q', filter.text);
  const query = params.toString();
  return query ? `#history?${query}` : '#history';
}

/** The listStepSummaries params for a filter. */
export function summaryParams(filter: HistoryFilter): { status: StepStatus[]; agent?: string; planId?: string; text?: string } {
  return {
    status: filter.status ? [filter.status] : [...HISTORY_STATUSES],
    ...(filter.agent ? { agent: filter.agent === YOU ? '' : filter.agent } : {}),
    ...(filter.plan ? { planId: filter.plan } : {}),
    ...(filter.text.trim() ? { text: filter.text.trim() } : {}),
  };
}
