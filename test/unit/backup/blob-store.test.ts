import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BlobStore, sha256Of } from '../../../src/backup/blob-store.js';
import { writeFileAtomic } from '../../../src/fs/atomic-write.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * A blob is read back byte for byte before its rename (verifyReadBack), against the very bytes
 * meant: views into a larger buffer (Node's pooled small buffers, a subarray of a read) must be
 * compared at their own offset, or a whole backup would be refused, or a wrong one kept.
 */
describe('blob writes read back', () => {
  it('stores views into a larger buffer exactly, small (pooled) and bigger than one read chunk', () => {
    const dir = tempDir();
    const blobs = new BlobStore(path.join(dir, 'blobs'));
    const pooled = Buffer.from('a small pooled buffer');
    expect(pooled.byteOffset).toBeGreaterThan(0);
    const backing = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < backing.length; i++) backing[i] = (i * 31) & 0xff;
    const view = backing.subarray(5, backing.length - 3);
    for (const data of [pooled, view, Buffer.alloc(0)]) {
      const hash = blobs.put(data, sha256Of(data));
      expect(blobs.get(hash).equals(data)).toBe(true);
      const file = path.join(dir, 'blobs', hash.slice(0, 2), hash.slice(2));
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    }
    // Nothing but the blobs is left: no temporary file of a write.
    const names = fs.readdirSync(path.join(dir, 'blobs'), { recursive: true }).map(String);
    expect(names.filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('replaces a blob cut short (its size disagrees) with the whole content', () => {
    const dir = tempDir();
    const blobs = new BlobStore(path.join(dir, 'blobs'));
    const data = Buffer.from('the whole pre-image\n'.repeat(1000));
    const hash = sha256Of(data);
    const file = path.join(dir, 'blobs', hash.slice(0, 2), hash.slice(2));
    writeFileAtomic(file, data.subarray(0, 100), 0o600, { verifyReadBack: true });
    expect(blobs.put(data, hash)).toBe(hash);
    expect(fs.readFileSync(file).equals(data)).toBe(true);
  });
});
