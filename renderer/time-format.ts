/**
 * The one time format of the window: the locale's own (Intl.DateTimeFormat with the browser's
 * locale, 12 or 24 h as that locale says), used by the queue, History, the audit log and Settings.
 * Formatters are built once per locale: toLocaleString with options builds a new one per call,
 * which cost more than the rest of an audit row's render together while scrolling.
 */
const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(kind: 'full' | 'short', locale: string | undefined): Intl.DateTimeFormat {
  const key = `${kind}|${locale ?? ''}`;
  let format = formats.get(key);
  if (!format) {
    // No hour12 here: the locale decides, so en-US reads "3:10:56 PM" and de-DE "15:10:56".
    format = new Intl.DateTimeFormat(
      locale,
      kind === 'full'
        ? { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', second: '2-digit' }
        : { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', second: '2-digit' },
    );
    formats.set(key, format);
  }
  return format;
}

/** A moment with its date and year, in the locale's words; "—" for none, the raw text for an unreadable one. */
export function formatTime(iso: string | null | undefined, locale?: string): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return formatFor('full', locale).format(date);
}

/** The same without the year, for dense tables (audit rows). */
export function formatShortTime(iso: string, locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return formatFor('short', locale).format(date);
}
