import { describe, expect, it } from 'vitest';
import { OutputDemuxer } from '../../../../src/sandbox/docker/output-capture.js';

function frame(type: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('OutputDemuxer', () => {
  it('separates stdout and stderr frames', () => {
    const demux = new OutputDemuxer(1024);
    demux.write(Buffer.concat([frame(1, 'out1 '), frame(2, 'err'), frame(1, 'out2')]));
    expect(demux.result()).toEqual({
      stdout: { text: 'out1 out2', bytes: 9, truncated: false },
      stderr: { text: 'err', bytes: 3, truncated: false },
    });
  });

  it('reassembles headers and payloads split across chunks at every byte', () => {
    const stream = Buffer.concat([frame(1, 'hello'), frame(2, 'world'), frame(1, '!')]);
    for (let cut = 1; cut < stream.length; cut++) {
      const demux = new OutputDemuxer(1024);
      demux.write(stream.subarray(0, cut));
      demux.write(stream.subarray(cut));
      expect(demux.result().stdout.text).toBe('hello!');
      expect(demux.result().stderr.text).toBe('world');
    }
  });

  it('keeps at most the cap per stream and flags the rest as truncated', () => {
    const demux = new OutputDemuxer(4);
    demux.write(Buffer.concat([frame(1, 'abcdef'), frame(1, 'gh'), frame(2, 'xy')]));
    const { stdout, stderr } = demux.result();
    expect(stdout).toEqual({ text: 'abcd', bytes: 8, truncated: true });
    expect(stderr).toEqual({ text: 'xy', bytes: 2, truncated: false });
  });
});
