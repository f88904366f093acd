import picomatch from 'picomatch';

/**
 * Whether a root-relative path looks like it holds secrets. Patterns without a slash match a name
 * anywhere (`.env*` catches `app/.env.local`); patterns with one match at any depth (`.ssh/**`).
 */
export function matchingSecretGlob(relativePath: string, secretGlobs: readonly string[]): string | undefined {
  const normalized = relativePath.split('\\').join('/');
  return secretGlobs.find((glob) => {
    const options = { dot: true, basename: !glob.includes('/') };
    return picomatch.isMatch(normalized, glob, options) || picomatch.isMatch(normalized, `**/${glob}`, { dot: true });
  });
}
