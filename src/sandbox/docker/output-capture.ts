/** One output stream as kept: the first `cap` bytes, the total seen, and whether the rest was dropped. */
export interface CapturedStream {
  text: string;
  bytes: number;
  truncated: boolean;
}

class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  total = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.cap - this.kept;
    if (room <= 0) return;
    const slice = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(Buffer.from(slice));
    this.kept += slice.length;
  }

  result(): CapturedStream {
    return { text: Buffer.concat(this.chunks).toString('utf8'), bytes: this.total, truncated: this.total > this.kept };
  }
}

/**
 * Splits Docker's multiplexed attach stream (8-byte header: stream type, 3 zero bytes, big-endian
 * length) into stdout and stderr, keeping at most `cap` bytes of each. Memory stays bounded however
 * much a command prints: beyond the cap, frames are counted and dropped.
 */
export class OutputDemuxer {
  private readonly stdout: CappedBuffer;
  private readonly stderr: CappedBuffer;
  private pending: Buffer = Buffer.alloc(0);
  private frameType = 0;
  private frameLeft = 0;

  /** `onChunk` hears every piece of output as it comes, kept or not (a running step's live tail). */
  constructor(
    cap: number,
    private readonly onChunk?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void,
  ) {
    this.stdout = new CappedBuffer(cap);
    this.stderr = new CappedBuffer(cap);
  }

  write(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.frameLeft > 0) {
        const take = Math.min(this.frameLeft, chunk.length - offset);
        const piece = chunk.subarray(offset, offset + take);
        (this.frameType === 2 ? this.stderr : this.stdout).push(piece);
        this.onChunk?.(this.frameType === 2 ? 'stderr' : 'stdout', piece);
        this.frameLeft -= take;
        offset += take;
        continue;
      }
      // Headers may be split across chunks: gather 8 bytes before reading one.
      const need = 8 - this.pending.length;
      const headerPart = chunk.subarray(offset, offset + need);
      this.pending = Buffer.concat([this.pending, headerPart]);
      offset += headerPart.length;
      if (this.pending.length < 8) return;
      this.frameType = this.pending[0]!;
      this.frameLeft = this.pending.readUInt32BE(4);
      this.pending = Buffer.alloc(0);
    }
  }

  result(): { stdout: CapturedStream; stderr: CapturedStream } {
    return { stdout: this.stdout.result(), stderr: this.stderr.result() };
  }
}
