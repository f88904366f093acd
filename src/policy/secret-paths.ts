import { firstMatchingGlob, globListMatcher, normalizedForMatching, type PathMatchOptions, type PathMatcher } from './path-patterns.js';

/**
 * Whether a root-relative path looks like it holds secrets. Patterns without a slash match a name
 * anywhere (`.env*` catches `app/.env.local`); patterns with one match at any depth (`.ssh/**`).
 * Pass `caseInsensitive` (see filesystemIgnoresCase) where `.NPMRC` opens `.npmrc`.
 */
export function matchingSecretGlob(
  relativePath: string,
  secretGlobs: readonly string[],
  options: PathMatchOptions = {},
): string | undefined {
  return firstMatchingGlob(relativePath, secretGlobs, options);
}

/** The same test as matchingSecretGlob, as one function for walking many files (the Docker scratch copy). */
export function secretPathMatcher(secretGlobs: readonly string[], options: PathMatchOptions = {}): PathMatcher {
  const firstMatch = globListMatcher(secretGlobs, options);
  return (relativePath) => firstMatch(normalizedForMatching(relativePath)) !== undefined;
}
