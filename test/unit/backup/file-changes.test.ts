import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BlobStore, sha256Of } from '../../../src/backup/blob-store.js';
import { applyFileChanges, backupFileChanges, hashFileChange, isBinary, previewFileChange, readCurrent, revertFileChanges } from '../../../src/backup/file-changes.js';
import { ExecutorError } from '../../../src/domain/errors.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function setup() {
  const dir = tempDir();
  return { dir, blobs: new BlobStore(path.join(dir, 'blobs')), file: path.join(dir, 'work', 'a.txt') };
}

function change(file: string, after: string | Buffer | null) {
  const current = readCurrent(file);
  return hashFileChange({ absolutePath: file, displayPath: 'a.txt', before: current.content, after: typeof after === 'string' ? Buffer.from(after) : after, mode: current.mode });
}

describe('file changes', () => {
  it('previews binary content by size and hash instead of a diff', () => {
    const { file } = setup();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]);
    const preview = previewFileChange(change(file, png));
    expect(preview.binary).toBe(true);
    expect(preview.diff).toBeNull();
    expect(preview.diffOmittedReason).toContain(`binary, 8 bytes, sha256 ${sha256Of(png)}`);
    expect(isBinary(Buffer.from('plain text'))).toBe(false);
    expect(isBinary(Buffer.from([0xff, 0xfe, 0x41]))).toBe(true);
  });

  it('backs up, applies and reverts exactly, keeping the file mode', () => {
    const { blobs, file } = setup();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, 'before\n', { mode: 0o640 });
    fs.chmodSync(file, 0o640);
    const planned = change(file, 'after\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    expect(fs.readFileSync(file, 'utf8')).toBe('after\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
    revertFileChanges(blobs, rows);
    expect(fs.readFileSync(file, 'utf8')).toBe('before\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
  });

  it('revert deletes a file the step created', () => {
    const { blobs, file } = setup();
    const planned = change(file, 'new\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    revertFileChanges(blobs, rows);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('revert refuses when the file changed since the step, and changes nothing', () => {
    const { blobs, file } = setup();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, 'v1\n');
    const planned = change(file, 'v2\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    fs.writeFileSync(file, 'v3 by the person\n');
    try {
      revertFileChanges(blobs, rows);
      expect.unreachable();
    } catch (error) {
      expect((error as ExecutorError).code).toBe('REVERT_CONFLICT');
      expect((error as ExecutorError).details).toEqual({
        conflicts: [{ path: file, expectedHash: sha256Of(Buffer.from('v2\n')), currentHash: sha256Of(Buffer.from('v3 by the person\n')), diff: expect.any(String) }],
      });
      // The person sees what revert would do to the file as it is now, not the step's own old diff.
      const { diff } = ((error as ExecutorError).details!.conflicts as { diff: string }[])[0]!;
      expect(diff).toContain('-v3 by the person');
      expect(diff).toContain('+v1');
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('v3 by the person\n');
  });

  it('refuses to restore from a corrupted backup blob', () => {
    const { blobs, dir, file } = setup();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, 'v1\n');
    const planned = change(file, 'v2\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    const preHash = rows[0]!.preHash!;
    fs.writeFileSync(path.join(dir, 'blobs', preHash.slice(0, 2), preHash.slice(2)), 'tampered');
    expect(() => revertFileChanges(blobs, rows)).toThrow(/corrupt/);
    expect(fs.readFileSync(file, 'utf8')).toBe('v2\n');
  });

  it('refuses to treat a directory as a file', () => {
    const { dir } = setup();
    expect(() => readCurrent(dir)).toThrow(ExecutorError);
  });
});
