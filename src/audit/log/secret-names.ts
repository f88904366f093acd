/**
 * What a credential looks like, in one place. A key whose name matches has its value stored as a
 * salted HMAC (recordable-value.ts), also where it stands inside a command line (inline-secrets.ts).
 */
export const SECRET_KEY_PATTERN =
  /pass(?:word|wd|phrase)?$|passwd|secret|token|api[_-]?key|authorization|^auth$|cookie|private[_-]?key|credential|session[_-]?id|access[_-]?key/i;
