import { visibleLine as line } from '../domain/visible-text.js';

/*
 * Moments in words for every CLI printer (`--json` keeps ISO). Light on purpose: a command that prints
 * a time imports this, not render.ts and the action modules behind it.
 */

/**
 * A moment in the local time zone, in words: "Nov 25, 2026, 2:51:07 PM GMT+1" (the machine's locale
 * decides 12 or 24 h). The CLI never prints a bare ISO time in a sentence; `--json` keeps ISO.
 */
export function localTimeWords(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return line(iso);
  // Built once: a formatter per call cost more than the rest of a row in a long `audit show`.
  moment ??= new Intl.DateTimeFormat(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'short',
  });
  return moment.format(date);
}

let moment: Intl.DateTimeFormat | undefined;

/** A span of local time in words: the end as its time of day alone when it falls on the start's day ("… 2:51:07 PM GMT+1 → 2:51:09 PM"). */
export function localTimeSpanWords(startIso: string, endIso: string): string {
  const start = new Date(startIso);
  const end = new Date(endIso);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()) || start.toDateString() !== end.toDateString())
    return `${localTimeWords(startIso)} → ${localTimeWords(endIso)}`;
  return `${localTimeWords(startIso)} → ${new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', second: '2-digit' }).format(end)}`;
}
