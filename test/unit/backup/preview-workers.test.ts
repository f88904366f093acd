import { describe, expect, it } from 'vitest';
import { previewFileChange, type FileChange } from '../../../src/backup/file-changes.js';
import { previewFileChangeOffLoop, previewFileChangesOffLoop } from '../../../src/backup/preview-workers.js';

function bigText(lines: number, edit: (line: string, index: number) => string = (line) => line): Buffer {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) out.push(edit(`line ${i} of a big file, with text ${i * 7}`, i));
  return Buffer.from(out.join('\n') + '\n');
}

function sharedCopy(bytes: Buffer): Buffer {
  const shared = Buffer.from(new SharedArrayBuffer(bytes.length));
  shared.set(bytes);
  return shared;
}

const change = (before: Buffer | null, after: Buffer | null, extra: Partial<FileChange> = {}): FileChange => ({
  absolutePath: '/ws/big.txt',
  displayPath: 'big.txt',
  before,
  after,
  mode: before === null ? null : 0o644,
  ...extra,
});

describe('previewFileChangeOffLoop', () => {
  it('gives the very preview the inline function gives, computed on a worker (diff, hashes, kept share)', async () => {
    const before = bigText(8_000);
    const cases: FileChange[] = [
      change(
        before,
        bigText(8_000, (line, i) => (i % 97 === 0 ? `${line} changed` : line)),
      ),
      // Most lines replaced: contentLoss 'replaced' with its kept percent.
      change(
        before,
        bigText(8_000, (line, i) => (i % 5 === 0 ? line : `other ${i}`)),
      ),
      change(null, before),
      change(before, null),
      change(before, Buffer.from('   \n\n')),
      change(Buffer.concat([before, Buffer.from([0, 1, 2])]), before),
      change(
        before,
        bigText(8_000, (line, i) => (i === 5 ? `${line} changed` : line)),
        { modeAfter: 0o600, dropped: ['set-uid bit dropped'] },
      ),
      // A large write's content in shared memory (content-bytes.ts), its sha256 known: the worker reads it where it is.
      change(before, sharedCopy(bigText(8_000, (line, i) => (i % 50 === 0 ? `${line} edited` : line)))),
    ];
    for (const each of cases) {
      const offLoop = await previewFileChangeOffLoop(each, { inlineBelowBytes: 0 });
      expect(offLoop).toEqual(previewFileChange(each));
    }
    const many = await previewFileChangesOffLoop(cases, { inlineBelowBytes: 0 });
    expect(many).toEqual(cases.map((each) => previewFileChange(each)));
  }, 60_000);

  it('hands back Buffers the caller still owns: its contents are copied to the worker, not moved', async () => {
    const before = bigText(30_000);
    const after = bigText(30_000, (line, i) => (i === 1 ? 'edited' : line));
    const each = change(before, after);
    const preview = await previewFileChangeOffLoop(each, { inlineBelowBytes: 0 });
    expect(preview.diff).toContain('+edited');
    expect(each.before!.length).toBe(before.length);
    expect(each.after!.equals(after)).toBe(true);
  }, 60_000);

  it('never waits for ever: a worker that does not answer in time leaves the diff out and says why, hashes intact', async () => {
    const before = bigText(60_000);
    const after = bigText(60_000, (line, i) => (i % 3 === 0 ? `${line}!` : line));
    const each = change(before, after);
    const preview = await previewFileChangeOffLoop(each, { inlineBelowBytes: 0, timeoutMs: 1 });
    const inline = previewFileChange(each);
    expect(preview.diff).toBeNull();
    expect(preview.diffOmittedReason).toMatch(/could not be prepared \(no answer within/);
    expect(preview.preHash).toBe(inline.preHash);
    expect(preview.postHash).toBe(inline.postHash);
    expect(preview.contentLoss).toBe(inline.contentLoss);
  }, 60_000);

  it('keeps small changes inline and equal', async () => {
    const each = change(Buffer.from('a\nb\n'), Buffer.from('a\nc\n'));
    expect(await previewFileChangeOffLoop(each)).toEqual(previewFileChange(each));
  });
});
