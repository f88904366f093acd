import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { guardPath, pathGuard, PathVerdictMemo } from '../../../src/policy/path-guard.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * A kept verdict (PathVerdictMemo) must be guardPath's verdict on the tree as it is now, whatever changed
 * between passes: names read from a folder's listing (many asked), nested roots, trailing separators,
 * a link put in a name's place, a link's target swapped, a folder above a folder replaced.
 */

const NAMES = ['a', 'b', 'c', 'f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7', 'f8', 'A', 'x.txt'] as const;
const FOLDERS = ['', 'a/', 'b/', 'a/b/', 'a/b/c/', 'c/'] as const;

type Change =
  | { kind: 'linkOut'; at: string; to: 'outside' | 'data' | 'root' | 'b' | 'dangling' }
  | { kind: 'unlink'; at: string }
  | { kind: 'mkdir'; at: string }
  | { kind: 'file'; at: string };

const place = fc.tuple(fc.constantFrom(...FOLDERS), fc.constantFrom(...NAMES)).map(([folder, name]) => `${folder}${name}`);
const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({
    kind: fc.constant('linkOut' as const),
    at: place,
    to: fc.constantFrom('outside', 'data', 'root', 'b', 'dangling') as fc.Arbitrary<'outside' | 'data' | 'root' | 'b' | 'dangling'>,
  }),
  fc.record({ kind: fc.constant('unlink' as const), at: place }),
  fc.record({ kind: fc.constant('mkdir' as const), at: place }),
  fc.record({ kind: fc.constant('file' as const), at: place }),
);

function apply(changes: Change[], dirs: { root: string; outside: string; dataDir: string }): void {
  for (const item of changes) {
    const target = path.join(dirs.root, item.at);
    try {
      if (item.kind === 'unlink') {
        fs.rmSync(target, { recursive: true, force: true });
        continue;
      }
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.rmSync(target, { recursive: true, force: true });
      if (item.kind === 'mkdir') fs.mkdirSync(target);
      else if (item.kind === 'file') fs.writeFileSync(target, 'x');
      else {
        const to = {
          outside: dirs.outside,
          data: dirs.dataDir,
          root: dirs.root,
          b: path.join(dirs.root, 'b'),
          dangling: path.join(dirs.outside, 'gone', 'x'),
        }[item.to];
        fs.symlinkSync(to, target);
      }
    } catch {
      /* through a file or a link: does not fit */
    }
  }
}

describe('PathVerdictMemo against a fresh guardPath, the tree changed between passes (attack)', () => {
  it('every kept verdict is the fresh one', () => {
    fc.assert(
      fc.property(
        fc.array(change, { maxLength: 14 }),
        fc.array(change, { minLength: 1, maxLength: 8 }),
        fc.array(fc.tuple(fc.boolean(), place, fc.boolean()), { minLength: 8, maxLength: 40 }),
        fc.constantFrom('one root', 'nested roots', 'data inside root'),
        (before, between, requests, layout) => {
          const base = tempDir();
          const root = path.join(base, 'root');
          const dirs = {
            root,
            outside: path.join(base, 'outside'),
            dataDir: layout === 'data inside root' ? path.join(root, 'c') : path.join(base, 'data'),
          };
          for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
          apply(before, dirs);
          const roots = layout === 'nested roots' ? [path.join(root, 'a'), root] : [root];
          const asked = requests.map(([absolute, at, slash]) => `${absolute ? `${root}/` : ''}${at}${slash ? '/' : ''}`);
          const memo = new PathVerdictMemo();
          const first = pathGuard(roots, dirs.dataDir, memo);
          for (const requested of asked) expect(first(requested)).toEqual(guardPath(requested, roots, dirs.dataDir));
          apply(between, dirs);
          for (const pass of [pathGuard(roots, dirs.dataDir, memo), pathGuard(roots, dirs.dataDir, memo)])
            for (const requested of asked) expect(pass(requested)).toEqual(guardPath(requested, roots, dirs.dataDir));
        },
      ),
      { numRuns: 300 },
    );
  });
});
