/**
 * The workspace folder a task names: "fix the tests in ~/proj/api" works in the root that holds
 * ~/proj/api. A run works in one of the person's roots, so the named folder picks the deepest root
 * that holds it. Paths are read as the person writes them: absolute (`/home/ada/proj/api`), from the
 * home folder (`~/proj/api`) or relative (`proj/api/src`); the last two are matched by their leading
 * folders against the end of a root's path (the window does not know the home folder, and need not).
 * Nothing here is trusted: it only chooses which root the New run box shows first.
 */

/** Words of a task that read as paths: a `/` inside, or starting with `~/`. Quotes, backticks and a closing full stop are not part of them. */
function pathsIn(task: string): string[] {
  const found: string[] = [];
  for (const match of task.matchAll(/(?:^|[\s"'`(<\[])((?:~|\.{1,2})?\/?[\w.@+-]+(?:\/[\w.@+-]*)+|~\/[\w.@+-]+)/g)) {
    const word = match[1]!.replace(/[.,;:!?]+$/, '').replace(/\/+$/, '');
    if (word.includes('/') && word !== '~') found.push(word);
  }
  return found;
}

function segments(folder: string): string[] {
  return folder.split('/').filter((part) => part !== '' && part !== '.');
}

/**
 * The folders of a path with each `..` taken back, so `/root/api/../../etc` is read where it lands
 * (`/etc`), not by its leading folders. Null when a `..` climbs above where the path starts: above
 * `/` nothing is left to compare, and above `~/` or a relative start the place is unknown here.
 */
function resolvedSegments(path: string): string[] | null {
  const out: string[] = [];
  for (const part of segments(path)) {
    if (part !== '..') out.push(part);
    else if (out.length === 0) return null;
    else out.pop();
  }
  return out;
}

/** Whether `named` (as written in the task) is the root or inside it. */
function isUnder(named: string, root: string): boolean {
  const rootParts = segments(root);
  if (named.startsWith('/')) {
    const parts = resolvedSegments(named);
    if (parts === null) return false;
    return parts.length >= rootParts.length && rootParts.every((part, index) => parts[index] === part);
  }
  const parts = resolvedSegments(named.replace(/^~\//, ''));
  if (parts === null || parts.length === 0) return false;
  // The named path's first k folders are the root's last k: the root is `<somewhere>/proj/api` and the task says `proj/api/…`.
  for (let k = Math.min(parts.length, rootParts.length); k >= 1; k--) {
    const tail = rootParts.slice(rootParts.length - k);
    if (tail.every((part, index) => parts[index] === part)) return true;
  }
  return false;
}

/** The root the task names (the deepest holding the first path it names that is under any root), or null. */
export function rootNamedInTask(task: string, roots: readonly string[]): string | null {
  for (const named of pathsIn(task)) {
    const holding = roots.filter((root) => isUnder(named, root));
    if (holding.length > 0) return holding.reduce((deepest, root) => (segments(root).length > segments(deepest).length ? root : deepest));
  }
  return null;
}
