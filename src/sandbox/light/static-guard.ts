/**
 * A courtesy, not the boundary: it turns away code that obviously tries to reach outside the
 * sandbox, with a message that says which pattern, so an honest agent learns quickly. Code that
 * slips past it (unicode escapes, computed names) still meets the worker's real walls.
 */
export const BLOCKED_PATTERNS: readonly string[] = [
  'require(',
  'import(',
  'eval(',
  'Function(',
  'process.',
  'child_process',
  '__proto__',
  'constructor[',
];

export function blockedPattern(code: string): string | undefined {
  const compact = code.replace(/\s+/g, '');
  return BLOCKED_PATTERNS.find((pattern) => compact.includes(pattern.replace(/\s+/g, '')));
}
