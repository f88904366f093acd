import type { FileChangePreview } from '../domain/step-record.js';

/**
 * What a changeset does to a repository, in git's words rather than as the files under `.git`: a
 * `git commit` writes a dozen files (loose objects, the index, the branch's ref, two reflogs,
 * COMMIT_EDITMSG) and the person should read "a new commit 1a2b3c4 on branch main", not forty paths.
 * Read from the preview's diffs alone (a ref file is one line of text), so it says only what the
 * files show; the files themselves stay listed in the preview.
 */
export function gitChangeSummary(files: readonly FileChangePreview[]): string | null {
  const byRepository = new Map<string, FileChangePreview[]>();
  for (const file of files) {
    const segments = file.path.split('/');
    const at = segments.findIndex((segment) => segment.toLowerCase() === '.git');
    if (at < 0) continue;
    const repository = segments.slice(0, at + 1).join('/');
    const list = byRepository.get(repository) ?? [];
    list.push(file);
    byRepository.set(repository, list);
  }
  const sentences = [...byRepository].map(([repository, changed]) => repositorySentence(repository, changed));
  return sentences.length > 0 ? sentences.join('; ') : null;
}

const SHORT = 7;

/** The lines a unified diff adds and removes (its own `+++`/`---` headers left out). */
function diffLines(diff: string | null): { added: string[]; removed: string[] } {
  const added: string[] = [];
  const removed: string[] = [];
  for (const line of (diff ?? '').split('\n')) {
    if (line.startsWith('+++') || line.startsWith('---')) continue;
    if (line.startsWith('+')) added.push(line.slice(1));
    else if (line.startsWith('-')) removed.push(line.slice(1));
  }
  return { added, removed };
}

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

function shortId(line: string | undefined): string | null {
  const id = line?.trim();
  return id && OBJECT_ID.test(id) ? id.slice(0, SHORT) : null;
}

function refSentence(name: string, file: FileChangePreview): string {
  const [kind, ...rest] = name.split('/');
  const short = rest.join('/');
  const noun = kind === 'heads' ? 'branch' : kind === 'tags' ? 'tag' : 'ref';
  const label = kind === 'heads' || kind === 'tags' ? `${noun} ${short}` : `ref ${name}`;
  if (!file.existsAfter) return `deletes ${label}`;
  const { added, removed } = diffLines(file.diff);
  const after = shortId(added.at(-1));
  const before = shortId(removed.at(-1));
  // A new loose ref is a new branch, or one whose old value sits in packed-refs (any cloned repository): "sets" is true of both.
  if (!file.existedBefore)
    return kind === 'heads' ? `sets ${label} to commit ${after ?? '(not shown)'}` : `sets ${label} to ${after ?? '(not shown)'}`;
  if (kind === 'heads') return `moves ${label} to commit ${after ?? '(not shown)'}${before ? ` (from ${before})` : ''}`;
  return `moves ${label} to ${after ?? '(not shown)'}${before ? ` (from ${before})` : ''}`;
}

function repositorySentence(repository: string, files: FileChangePreview[]): string {
  const inside = (file: FileChangePreview) => file.path.slice(repository.length + 1);
  const parts: string[] = [];
  const message = files.find((file) => inside(file) === 'COMMIT_EDITMSG' && file.existsAfter);
  const subject = message ? diffLines(message.diff).added.find((line) => line.trim() !== '' && !line.startsWith('#')) : undefined;
  for (const file of files) {
    const relative = inside(file);
    if (relative.startsWith('refs/')) parts.push(refSentence(relative.slice('refs/'.length), file));
  }
  if (subject !== undefined && parts.some((part) => part.includes('to commit')))
    parts.push(`commit message "${subject.length > 72 ? `${subject.slice(0, 71)}…` : subject}"`);
  const head = files.find((file) => inside(file) === 'HEAD');
  if (head) {
    const target = diffLines(head.diff).added.at(-1)?.trim();
    parts.push(target ? `points HEAD at ${target.replace(/^ref: refs\/heads\//, 'branch ').slice(0, 80)}` : 'changes HEAD');
  }
  if (files.some((file) => inside(file) === 'packed-refs')) parts.push('rewrites packed-refs');
  const objects = files.filter((file) => inside(file).startsWith('objects/'));
  const newObjects = objects.filter((file) => !file.existedBefore && file.existsAfter).length;
  if (newObjects > 0) parts.push(`${newObjects} new object${newObjects === 1 ? '' : 's'}`);
  if (objects.length > newObjects) parts.push(`changes or removes ${objects.length - newObjects} existing object file(s)`);
  if (files.some((file) => inside(file) === 'index')) parts.push('updates the index (staging area)');
  // A submodule's repository (`modules/<name>/…`, nested to any depth) has hooks of its own, which git
  // runs there (a `git submodule update` checks out in it): named as hooks too, never left in "and N more".
  const isHook = (relative: string) => /^(?:modules\/.+\/)?hooks\//.test(relative);
  const hooks = files.filter((file) => isHook(inside(file)) && file.existsAfter).map(inside);
  if (hooks.length > 0) parts.push(`changes ${hooks.join(', ')}, which git runs on this machine`);
  const said = new Set(['COMMIT_EDITMSG', 'HEAD', 'packed-refs', 'index']);
  const rest = files.filter((file) => {
    const relative = inside(file);
    return !said.has(relative) && !/^(refs|objects|logs|hooks)\//.test(relative) && !isHook(relative);
  });
  if (rest.length > 0)
    parts.push(`changes ${rest.map(inside).slice(0, 3).join(', ')}${rest.length > 3 ? ` and ${rest.length - 3} more` : ''}`);
  // A commit writes its message and moves (or makes) a branch; a branch moved without one is a reset, a fetch or a merge: said only as a move.
  const committed = subject !== undefined && parts.some((part) => part.includes('to commit'));
  const verb = committed ? 'git commit' : 'git';
  return `${verb} in ${repository}: ${parts.join(', ') || 'changes its files'}; ${files.length} file${files.length === 1 ? '' : 's'} inside ${repository} in all`;
}
