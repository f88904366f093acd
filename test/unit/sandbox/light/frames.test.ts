import { describe, expect, it } from 'vitest';
import { FrameDecoder, MAX_FRAME_BYTES, parseWorkerFrame } from '../../../../src/sandbox/light/frames.js';

describe('FrameDecoder', () => {
  it('reassembles lines split anywhere, including inside a multi-byte character', () => {
    const decoder = new FrameDecoder();
    const bytes = Buffer.from('{"a":"é€"}\n{"b":2}\n', 'utf8');
    const frames: unknown[] = [];
    for (let i = 0; i < bytes.length; i++) frames.push(...decoder.push(bytes.subarray(i, i + 1)));
    expect(frames).toEqual([{ a: 'é€' }, { b: 2 }]);
  });

  it('turns a line that is not JSON into a malformed marker instead of throwing', () => {
    expect(new FrameDecoder().push(Buffer.from('nope\n{"ok":1}\n'))).toEqual([{ malformed: 'a line that is not JSON' }, { ok: 1 }]);
  });

  it('gives up on a line longer than the cap and stays broken', () => {
    const decoder = new FrameDecoder();
    const frames = decoder.push(Buffer.alloc(MAX_FRAME_BYTES + 1, 0x61));
    expect(frames).toEqual([{ malformed: `a frame larger than ${MAX_FRAME_BYTES} bytes` }]);
    expect(decoder.push(Buffer.from('{"late":1}\n'))).toEqual([]);
  });
});

describe('parseWorkerFrame', () => {
  it('accepts the protocol and nothing else', () => {
    expect(parseWorkerFrame({ t: 'ready' })).toEqual({ t: 'ready' });
    expect(parseWorkerFrame({ t: 'call', id: 1, tool: 'fetch', args: ['u'] })).toBeDefined();
    expect(parseWorkerFrame({ t: 'ready', extra: 1 })).toBeUndefined();
    expect(parseWorkerFrame({ t: 'done', ok: true, json: '1', tooLarge: false, logs: [1], logsTruncated: false })).toBeUndefined();
    expect(parseWorkerFrame(JSON.parse('{"t":"ready","__proto__":{"x":1}}'))).toBeUndefined();
    expect(parseWorkerFrame({ malformed: 'x' })).toBeUndefined();
  });
});
