import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  HELD_RECORDS_RESERVE_FILE,
  HeldRecordsReserve,
  RESERVE_SLOT_BYTES,
  RESERVE_SLOTS,
} from '../../../src/store/held-records-reserve.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';
import { defer } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/* The reserve for records held on a full disk (src/store/held-records-reserve.ts), on real files. */

function opened(dir: string): HeldRecordsReserve {
  const reserve = HeldRecordsReserve.open(dir);
  defer(() => reserve.close());
  return reserve;
}

describe('the held-records reserve', () => {
  it('keeps what was put across a reopen, oldest first, and forgets a cleared slot', () => {
    const dir = tempDir('reserve-');
    const reserve = opened(dir);
    const slots = ['a', 'b', 'c'].map((id) => reserve.put({ id }));
    reserve.clear(slots[1]!);
    reserve.close();
    const again = opened(dir);
    expect(again.entries().map((entry) => entry.value)).toEqual([{ id: 'a' }, { id: 'c' }]);
    // A new record after the reopen is ordered after those kept.
    again.put({ id: 'd' });
    again.close();
    expect(
      opened(dir)
        .entries()
        .map((entry) => entry.value),
    ).toEqual([{ id: 'a' }, { id: 'c' }, { id: 'd' }]);
  });

  it('refuses a record when every slot is taken, with STORAGE_FULL naming the reserve', () => {
    const dir = tempDir('reserve-');
    const reserve = opened(dir);
    for (let index = 0; index < RESERVE_SLOTS; index++) reserve.put({ index });
    expect(() => reserve.put({ index: 'one too many' })).toThrow(
      expect.objectContaining({
        code: 'STORAGE_FULL',
        details: expect.objectContaining({ reserveFull: true, path: path.join(dir, HELD_RECORDS_RESERVE_FILE) }),
      }),
    );
    expect(reserve.freeSlots).toBe(0);
  });

  it('reads a slot whose bytes were damaged (a torn write) as empty, and every other slot whole', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ id: fc.string({ maxLength: 40 }), n: fc.integer() }), { minLength: 1, maxLength: 12 }),
        fc.nat(),
        fc.nat({ max: RESERVE_SLOT_BYTES - 1 }),
        (values, pick, offset) => {
          const dir = tempDir('reserve-');
          const reserve = HeldRecordsReserve.open(dir);
          const slots = values.map((value) => reserve.put(value));
          reserve.close();
          const damaged = slots[pick % slots.length]!;
          const file = path.join(dir, HELD_RECORDS_RESERVE_FILE);
          const fd = fs.openSync(file, 'r+');
          const at = damaged * RESERVE_SLOT_BYTES + offset;
          const byte = Buffer.alloc(1);
          fs.readSync(fd, byte, 0, 1, at);
          byte[0] = byte[0]! ^ 0x5a;
          fs.writeSync(fd, byte, 0, 1, at);
          fs.closeSync(fd);
          const again = HeldRecordsReserve.open(dir);
          const found = again.entries();
          again.close();
          const payloadEnd = 48 + Buffer.byteLength(JSON.stringify(values[pick % slots.length]));
          // A flip past the record's payload touches padding nobody reads; any other flip loses exactly that record.
          const expected = values.filter((_, index) => offset >= payloadEnd || index !== pick % slots.length);
          expect(found.map((entry) => entry.value)).toEqual(expected);
        },
      ),
      { numRuns: 60, examples: [[[{ id: '', n: 0 }], 0, 8]] },
    );
  });

  it('gives a sparse copy its blocks again at open', () => {
    const dir = tempDir('reserve-');
    const file = path.join(dir, HELD_RECORDS_RESERVE_FILE);
    // The size it should have, but no blocks (as `cp --sparse=always` leaves a file of zeros).
    fs.writeFileSync(file, '');
    fs.truncateSync(file, RESERVE_SLOTS * RESERVE_SLOT_BYTES);
    opened(dir);
    expect(fs.statSync(file).blocks * 512).toBeGreaterThanOrEqual(RESERVE_SLOTS * RESERVE_SLOT_BYTES);
  });
});

describe.runIf(canMountTmpfs('held-records-reserve on a full disk'))('the reserve on a full disk (real tmpfs)', () => {
  it('takes every slot after the disk is full to its last block, and a reopen finds them', () => {
    const root = tempDir('tmpfs-');
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', root]).status).toBe(0);
    defer(() => spawnSync('umount', ['-l', root]));
    const reserve = HeldRecordsReserve.open(root);
    const fd = fs.openSync(path.join(root, 'filler.bin'), 'w');
    try {
      for (;;) fs.writeSync(fd, Buffer.alloc(4096));
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    }
    fs.closeSync(fd);
    // Nothing new fits on the disk…
    expect(() => fs.writeFileSync(path.join(root, 'more.bin'), Buffer.alloc(4096))).toThrow(/ENOSPC/);
    // …and the reserve takes all its records, each as large as a slot holds.
    for (let index = 0; index < RESERVE_SLOTS; index++) reserve.put({ index, pad: 'x'.repeat(RESERVE_SLOT_BYTES - 200) });
    reserve.close();
    const again = HeldRecordsReserve.open(root);
    expect(again.entries()).toHaveLength(RESERVE_SLOTS);
    again.close();
  });
});
