// Browser-safe (no Node imports): the IPC protocol signs with it in the page and the preload too.

/**
 * RFC 8785 canonical JSON: keys sorted by UTF-16 code units, ES number and string forms; the same
 * output as the `canonicalize` package (a property test holds them equal). Signing a large
 * listSteps reply canonicalizes every record on every call, so the common case copies the value
 * with its keys inserted in sorted order and lets the native JSON.stringify write it (about 3× less
 * time than building the text in JS). Objects whose key order JS would not keep (integer-like keys,
 * "__proto__") take the exact slow path.
 */
export function canonicalText(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(sortedCopy(value));
  } catch (error) {
    if (error !== KEY_ORDER_NOT_KEPT) throw error;
    text = canonicalValue(value);
  }
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

const KEY_ORDER_NOT_KEPT = new Error('key order not kept by a plain object');

/** The value with every object's keys in sorted order: objects already in order are reused, not copied. */
function sortedCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('NaN and Infinity have no JSON form');
    return value;
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      const sorted = sortedCopy(item);
      if (sorted !== item && copy === null) copy = value.slice(0, index);
      if (copy !== null) copy.push(sorted);
    }
    return copy ?? value;
  }
  const withToJson = value as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return sortedCopy(withToJson.toJSON());
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let inOrder = true;
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const first = key.charCodeAt(0);
    // JS puts integer-like keys first in numeric order, and "__proto__" would set the prototype.
    if ((first >= 48 && first <= 57 && /^(?:0|[1-9]\d*)$/.test(key)) || key === '__proto__') throw KEY_ORDER_NOT_KEPT;
    if (index > 0 && keys[index - 1]! > key) inOrder = false;
  }
  if (inOrder) {
    let copy: Record<string, unknown> | null = null;
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index]!;
      const item = record[key];
      const sorted = sortedCopy(item);
      if (sorted !== item && copy === null) {
        copy = {};
        for (let earlier = 0; earlier < index; earlier++) copy[keys[earlier]!] = record[keys[earlier]!];
      }
      if (copy !== null) copy[key] = sorted;
    }
    return copy ?? record;
  }
  keys.sort();
  const copy: Record<string, unknown> = {};
  for (const key of keys) copy[key] = sortedCopy(record[key]);
  return copy;
}

function canonicalValue(value: unknown): string | undefined {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('NaN and Infinity have no JSON form');
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    default:
      return undefined;
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let index = 0; index < value.length; index++) {
      if (index > 0) out += ',';
      out += canonicalValue(value[index]) ?? 'null';
    }
    return `${out}]`;
  }
  const withToJson = value as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return canonicalValue(withToJson.toJSON());
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const item = canonicalValue(record[key]);
    if (item === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += `${JSON.stringify(key)}:${item}`;
  }
  return `${out}}`;
}
