/**
 * The API key must never reach an error, a log line, a trace or the window. A server may echo it
 * back (whole, or masked like `sk-proj-****abcd`), so every text taken from the endpoint passes
 * through here before Executor keeps or shows it.
 */

const HIDDEN = '[key hidden]';
/** Shorter runs of the key than this are too common in ordinary text to hide. */
const SHARED_RUN = 6;

/** `text` with the key, and any word that shares a run of its characters, replaced by a marker. */
export function redactKey(text: string, apiKey: string | undefined): string {
  if (!apiKey) return text;
  let out = text.split(apiKey).join(HIDDEN);
  if (apiKey.length < SHARED_RUN) return out;
  const runs = new Set<string>();
  for (let at = 0; at + SHARED_RUN <= apiKey.length; at++) runs.add(apiKey.slice(at, at + SHARED_RUN));
  // A masked echo keeps only a head or a tail of the key; hiding the whole word that holds it
  // also hides the masked part, which says the key's shape.
  out = out.replace(/[^\s"'`<>(){}[\],;]+/g, (word) => {
    for (let at = 0; at + SHARED_RUN <= word.length; at++) if (runs.has(word.slice(at, at + SHARED_RUN))) return HIDDEN;
    return word;
  });
  return out;
}

/** A server's own words, made safe to show: no key, no control characters, not too long. */
export function serverWords(text: string, apiKey: string | undefined, limit = 300): string {
  // eslint-disable-next-line no-control-regex
  const flat = redactKey(text, apiKey)
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]+/g, ' ')
    .trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}

/**
 * The endpoint as Executor names it in messages: scheme, host, port and path — never a user or
 * password in the URL, nor its query (either may carry a key).
 */
export function endpointLabel(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return '(an address that is not a URL)';
  }
}
