import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { guardPath, pathGuard, PathVerdictMemo } from '../../../src/policy/path-guard.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * pathGuard answers many paths in one pass, resolving each folder once: for a tree that does not
 * change during the pass, every verdict must be guardPath's, links (to folders, to files, dangling,
 * out of the root, into the data directory) and missing folders included.
 */

const NAMES = ['a', 'b', 'c', 'link', 'HEAD', 'x.txt', '..x'] as const;

type Entry =
  | { kind: 'dir'; at: string[] }
  | { kind: 'file'; at: string[] }
  | { kind: 'link'; at: string[]; to: 'outside' | 'data' | 'sibling' | 'missing' | 'root' | 'parent'; sibling: string };

const segments = fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 });
/** What a step may ask for: the tree's names, and `.` and `..` that a path is normalized through. */
const requestedSegments = fc.array(fc.constantFrom(...NAMES, '.', '..'), { minLength: 1, maxLength: 4 });
const entry: fc.Arbitrary<Entry> = fc.oneof(
  fc.record({ kind: fc.constant('dir' as const), at: segments }),
  fc.record({ kind: fc.constant('file' as const), at: segments }),
  fc.record({
    kind: fc.constant('link' as const),
    at: segments,
    to: fc.constantFrom('outside', 'data', 'sibling', 'missing', 'root', 'parent'),
    sibling: fc.constantFrom(...NAMES),
  }),
);

/** Lays the entries out under root as far as they fit (a path through a file or a link is skipped). */
function build(entries: Entry[], dirs: { root: string; outside: string; dataDir: string }): void {
  for (const item of entries) {
    const target = path.join(dirs.root, ...item.at);
    try {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      if (fs.existsSync(target) || isLink(target)) continue;
      if (item.kind === 'dir') fs.mkdirSync(target);
      else if (item.kind === 'file') fs.writeFileSync(target, 'x');
      else {
        const to = {
          outside: dirs.outside,
          data: dirs.dataDir,
          sibling: item.sibling,
          missing: path.join(dirs.root, 'nowhere', item.sibling),
          root: dirs.root,
          parent: '..',
        }[item.to];
        fs.symlinkSync(to, target);
      }
    } catch {
      /* a parent is a file or a link out of the root: this entry does not fit the tree */
    }
  }
}

function isLink(target: string): boolean {
  try {
    return fs.lstatSync(target).isSymbolicLink();
  } catch {
    return false;
  }
}

describe('pathGuard (one pass over many paths)', () => {
  it('gives every path the verdict guardPath gives it, on trees with links, files and missing folders', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 12 }),
        fc.array(fc.tuple(fc.boolean(), requestedSegments, fc.boolean()), { minLength: 1, maxLength: 12 }),
        // A second root inside the first (roots are tried in order), and a data directory inside the root.
        fc.constantFrom('one root', 'nested roots', 'data inside root'),
        (entries, requests, layout) => {
          const base = tempDir();
          const root = path.join(base, 'root');
          const dirs = {
            root,
            outside: path.join(base, 'outside'),
            dataDir: layout === 'data inside root' ? path.join(root, 'c') : path.join(base, 'data'),
          };
          for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
          build(entries, dirs);
          const roots = layout === 'nested roots' ? [path.join(root, 'a'), root] : [root];
          const guard = pathGuard(roots, dirs.dataDir);
          for (const [absolute, parts, trailingSlash] of requests) {
            const joined = absolute ? `${root}/${parts.join('/')}` : parts.join('/');
            const requested = trailingSlash ? `${joined}/` : joined;
            const verdict = guard(requested);
            expect(verdict).toEqual(guardPath(requested, roots, dirs.dataDir));
            if (verdict.ok) expect(verdict.relativePath).toBe(path.relative(verdict.root, verdict.realPath));
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('gives every name of a folder asked about many times (read from its listing) the verdict guardPath gives it', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 16 }),
        // Many names of a few folders: past the count after which a pass reads a folder's listing.
        fc.array(fc.tuple(fc.constantFrom('', 'a/', 'b/', 'link/'), fc.constantFrom(...NAMES, 'head', 'X.TXT', 'new.txt')), {
          minLength: 8,
          maxLength: 40,
        }),
        (entries, requests) => {
          const base = tempDir();
          const root = path.join(base, 'root');
          const dirs = { root, outside: path.join(base, 'outside'), dataDir: path.join(base, 'data') };
          for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
          build(entries, dirs);
          const guard = pathGuard([root], dirs.dataDir);
          for (const [folder, name] of requests) {
            const requested = `${folder}${name}`;
            expect(guard(requested)).toEqual(guardPath(requested, [root], dirs.dataDir));
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('resolves a file reached through a linked folder to where it really is, as guardPath does', () => {
    const base = tempDir();
    const root = path.join(base, 'root');
    const dataDir = path.join(base, 'data');
    fs.mkdirSync(path.join(root, 'real'), { recursive: true });
    fs.mkdirSync(dataDir);
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'via'));
    fs.writeFileSync(path.join(root, 'real', 'one.txt'), '1');
    fs.symlinkSync(dataDir, path.join(root, 'real', 'into-data'));
    const guard = pathGuard([root], dataDir);
    expect(guard('via/one.txt')).toMatchObject({ ok: true, realPath: path.join(root, 'real', 'one.txt') });
    expect(guard('via/two.txt')).toMatchObject({ ok: true, realPath: path.join(root, 'real', 'two.txt') });
    expect(guard('via/into-data')).toMatchObject({ ok: false, code: 'PATH_OUTSIDE_ROOT' });
  });

  it('reuses a verdict of an earlier pass only while the path still resolves as it did: the tree changed between passes', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 10 }),
        // Between the passes: entries added, and some folders (and files) replaced by links (to outside, into the data directory…).
        fc.array(entry, { maxLength: 10 }),
        fc.array(
          fc.tuple(
            segments,
            fc.constantFrom('outside', 'data', 'sibling', 'root') as fc.Arbitrary<'outside' | 'data' | 'sibling' | 'root'>,
          ),
          {
            maxLength: 3,
          },
        ),
        fc.array(fc.tuple(fc.boolean(), requestedSegments), { minLength: 1, maxLength: 12 }),
        fc.constantFrom('one root', 'data inside root'),
        (before, added, replaced, requests, layout) => {
          const base = tempDir();
          const root = path.join(base, 'root');
          const dirs = {
            root,
            outside: path.join(base, 'outside'),
            dataDir: layout === 'data inside root' ? path.join(root, 'c') : path.join(base, 'data'),
          };
          for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
          build(before, dirs);
          const memo = new PathVerdictMemo();
          const asked = requests.map(([absolute, parts]) => (absolute ? `${root}/${parts.join('/')}` : parts.join('/')));
          const first = pathGuard([root], dirs.dataDir, memo);
          for (const requested of asked) expect(first(requested)).toEqual(guardPath(requested, [root], dirs.dataDir));
          for (const [at, to] of replaced) {
            const target = path.join(root, ...at);
            if (target === dirs.dataDir) continue;
            try {
              fs.rmSync(target, { recursive: true, force: true });
            } catch {
              continue; // reached through a link: not a place this test replaces
            }
            build([{ kind: 'link', at, to, sibling: 'a' }], dirs);
          }
          build(added, dirs);
          // Two passes after the change: the first may find kept verdicts stale, the second reuses what the first kept.
          for (const pass of [pathGuard([root], dirs.dataDir, memo), pathGuard([root], dirs.dataDir, memo)])
            for (const requested of asked) expect(pass(requested)).toEqual(guardPath(requested, [root], dirs.dataDir));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('keeps no verdict across a change of roots or data directory', () => {
    const base = tempDir();
    const root = path.join(base, 'root');
    const other = path.join(base, 'other');
    fs.mkdirSync(path.join(root, 'a'), { recursive: true });
    fs.mkdirSync(other);
    const memo = new PathVerdictMemo();
    const requested = path.join(root, 'a', 'x.txt');
    expect(pathGuard([root], path.join(base, 'data'), memo)(requested)).toMatchObject({ ok: true });
    expect(pathGuard([other], path.join(base, 'data'), memo)(requested)).toMatchObject({ ok: false, code: 'PATH_OUTSIDE_ROOT' });
    expect(pathGuard([root], path.join(root, 'a'), memo)(requested)).toMatchObject({ ok: false, code: 'PATH_OUTSIDE_ROOT' });
    // The root itself made a link elsewhere: the same request, the same memo, resolved afresh.
    fs.renameSync(root, path.join(base, 'moved'));
    fs.symlinkSync(other, root);
    expect(pathGuard([root], path.join(base, 'data'), memo)(requested)).toEqual(guardPath(requested, [root], path.join(base, 'data')));
  });
});
