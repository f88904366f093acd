import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The pictures of the window in the docs are taken by the e2e tests (UPDATE_DOCS_SCREENSHOTS=1), so
 * they can be made again after the window changes. None may be drawn by hand, left behind by a
 * renamed screen, or referenced without a test that takes it.
 */

const REPO = path.resolve(import.meta.dirname, '../../..');
const DOCS = path.join(REPO, 'docs');
const E2E = path.join(REPO, 'test', 'e2e');

function referencedPictures(): Set<string> {
  const names = new Set<string>();
  for (const file of [
    path.join(REPO, 'README.md'),
    ...fs
      .readdirSync(DOCS)
      .filter((name) => name.endsWith('.md'))
      .map((name) => path.join(DOCS, name)),
  ]) {
    for (const match of fs.readFileSync(file, 'utf8').matchAll(/\((?:docs\/)?([\w.-]+)\.png\)/g)) names.add(match[1]!);
  }
  return names;
}

/** The docs names each e2e test gives its screenshots: `screenshots(page, 'x', { light: 'queue', dark: 'queue-dark' })`. */
function picturesTakenByTests(): Map<string, string> {
  const taken = new Map<string, string>();
  for (const file of fs.readdirSync(E2E).filter((name) => name.endsWith('.test.ts'))) {
    const text = fs.readFileSync(path.join(E2E, file), 'utf8');
    for (const call of text.matchAll(/await screenshots\([^;]*\);/g)) {
      for (const named of call[0].matchAll(/\b(?:light|dark): '([\w.-]+)'/g)) taken.set(named[1]!, file);
    }
  }
  return taken;
}

describe('the pictures in the docs', () => {
  it('each one referenced is in docs/ and taken by an e2e test; each one in docs/ is referenced', () => {
    const referenced = referencedPictures();
    const onDisk = new Set(
      fs
        .readdirSync(DOCS)
        .filter((name) => name.endsWith('.png'))
        .map((name) => name.slice(0, -'.png'.length)),
    );
    const taken = picturesTakenByTests();
    expect(referenced.size).toBeGreaterThan(10);
    expect(
      [...referenced].filter((name) => !onDisk.has(name)),
      'referenced but missing from docs/',
    ).toEqual([]);
    expect(
      [...onDisk].filter((name) => !referenced.has(name)),
      'in docs/ but referenced nowhere',
    ).toEqual([]);
    expect(
      [...referenced].filter((name) => !taken.has(name)),
      'referenced but taken by no e2e test',
    ).toEqual([]);
    expect(
      [...taken.keys()].filter((name) => !referenced.has(name)),
      'taken for the docs but referenced nowhere',
    ).toEqual([]);
  });
});
