/*
 * The first thing the loopback web server does with a request: read its target (the text between
 * the method and "HTTP/1.1") into path segments, or say which 4xx it gets. Nothing after this sees
 * the raw target, so nothing after this can be fed a NUL byte, a broken percent-escape, an
 * absolute URL that `new URL()` throws on, or a ".." that climbs out of a folder. Pure: never throws.
 */

/** Longer than any path the UI or a download link uses, far shorter than Node's header cap. */
export const MAX_TARGET_LENGTH = 2048;

export type RequestTarget =
  | {
      ok: true;
      /** Decoded segments of the path: never "", ".", "..", and never holding "/", "\", ":" or a control character. */
      segments: string[];
      /** "/" + segments joined by "/", plus "/" when the target named a folder ("/assets/"). */
      pathname: string;
      /** The target named a folder: it ended with "/". */
      endsWithSlash: boolean;
    }
  | { ok: false; status: 400 | 414; reason: string };

// Visible ASCII only: what a browser sends after percent-encoding everything else.
const VISIBLE_ASCII = /^[\x21-\x7e]*$/;
// After decoding: a separator inside a segment, or a byte that means nothing in a file name here.
// eslint-disable-next-line no-control-regex
const FORBIDDEN_IN_SEGMENT = /[/\\:\u0000-\u001f\u007f]/;

export function parseRequestTarget(target: unknown): RequestTarget {
  if (typeof target !== 'string' || target.length === 0) return { ok: false, status: 400, reason: 'The request has no target.' };
  if (target.length > MAX_TARGET_LENGTH)
    return { ok: false, status: 414, reason: `The request target is longer than ${MAX_TARGET_LENGTH} characters.` };
  if (!VISIBLE_ASCII.test(target))
    return { ok: false, status: 400, reason: 'The request target holds a character that must be percent-encoded.' };
  // Origin-form only ("/path?query"): absolute URLs ("http://…") are for proxies, "*" is for OPTIONS.
  if (!target.startsWith('/') || target.startsWith('//'))
    return { ok: false, status: 400, reason: 'The request target must be a path starting with one "/".' };
  if (target.includes('#')) return { ok: false, status: 400, reason: 'A request target never carries a fragment.' };
  const query = target.indexOf('?');
  const rawPath = query === -1 ? target : target.slice(0, query);
  const rawSegments = rawPath.slice(1).split('/');
  const endsWithSlash = rawPath.endsWith('/');
  if (endsWithSlash) rawSegments.pop();
  const segments: string[] = [];
  for (const raw of rawSegments) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return { ok: false, status: 400, reason: 'The request path holds a broken percent-escape.' };
    }
    if (segment === '' || segment === '.' || segment === '..')
      return { ok: false, status: 400, reason: 'The request path has an empty, "." or ".." segment.' };
    if (FORBIDDEN_IN_SEGMENT.test(segment))
      return { ok: false, status: 400, reason: 'The request path holds an encoded separator, ":" or a control character.' };
    segments.push(segment);
  }
  const joined = `/${segments.join('/')}`;
  return { ok: true, segments, pathname: endsWithSlash && segments.length > 0 ? `${joined}/` : joined, endsWithSlash };
}
