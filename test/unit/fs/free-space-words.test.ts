import { describe, expect, it } from 'vitest';
import { formatBytes, formatBytesBeside } from '../../../src/fs/free-space.js';

describe('sizes said side by side', () => {
  it('keeps the short words where they differ', () => {
    expect(formatBytesBeside(512 * 1024, 3 * 1024 * 1024)).toEqual(['512.0 KiB', '3.0 MiB']);
    expect(formatBytesBeside(1024, 1024)).toEqual([formatBytes(1024), formatBytes(1024)]);
  });

  it('never says "1.0 MiB free, 1.0 MiB needed": sizes that round alike are said in bytes', () => {
    // Seen in the window's full-disk banner: a little over a MiB free, a little more needed.
    expect(formatBytesBeside(1_060_000, 1_090_000)).toEqual(['1,060,000 bytes', '1,090,000 bytes']);
    for (let free = 1_000_000; free < 1_100_000; free += 997) {
      const [a, b] = formatBytesBeside(free, 1_048_576);
      if (free !== 1_048_576) expect(a).not.toBe(b);
    }
  });
});
