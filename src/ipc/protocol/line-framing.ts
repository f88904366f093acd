/*
 * Framing for the stream transports (the local socket, and the same tags on WebSocket frames):
 * one message per line, `<tag>\t<message>\n`. The tag is a request number the reply repeats, so
 * replies may come back out of order; `e` tags an event. JSON text never holds a raw newline.
 */

export const EVENT_TAG = 'e';
const MAX_TAG_LENGTH = 16;

export interface TaggedMessage {
  tag: string;
  text: string;
}

export function frame(tag: string, text: string): string {
  return `${tag}\t${text}`;
}

/** Splits `<tag>\t<message>`; a missing or odd tag yields tag '' (the reply then cannot be matched, but still goes out). */
export function unframe(line: string): TaggedMessage {
  const tab = line.indexOf('\t');
  if (tab < 1 || tab > MAX_TAG_LENGTH || !/^[0-9A-Za-z_-]+$/.test(line.slice(0, tab))) return { tag: '', text: line };
  return { tag: line.slice(0, tab), text: line.slice(tab + 1) };
}

/**
 * Cuts a byte stream into lines, with a cap: a line longer than `maxLineBytes` is not buffered.
 * Its first bytes (enough for the tag) and its last ones (where a JSON-RPC client puts the id) are
 * reported once through onOversize and the rest is dropped up to the next newline, so the stream
 * stays in step and the connection stays up.
 */
export class LineSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private discarding = false;
  private discardedBytes = 0;

  constructor(
    /** A number, or a function for a cap that changes (the server's is a few KiB until the connection authenticates). */
    private readonly maxLineBytes: number | (() => number),
    private readonly onLine: (line: string) => void,
    private readonly onOversize: (head: string, byteLength: number, tail: string) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      const piece = chunk.subarray(start, end);
      if (this.discarding) {
        this.discardedBytes += piece.length;
        this.pendingTail = Buffer.concat([this.pendingTail, piece]).subarray(-TAIL_BYTES);
      } else if (this.buffered + piece.length > (typeof this.maxLineBytes === 'number' ? this.maxLineBytes : this.maxLineBytes())) {
        const head = Buffer.concat([...this.chunks, piece])
          .subarray(0, 64)
          .toString('utf8');
        this.discarding = true;
        this.discardedBytes = this.buffered + piece.length;
        this.chunks = [];
        this.buffered = 0;
        this.pendingHead = head;
        this.pendingTail = Buffer.from(piece.subarray(-TAIL_BYTES));
      } else if (piece.length) {
        this.chunks.push(Buffer.from(piece));
        this.buffered += piece.length;
      }
      if (newline === -1) return;
      if (this.discarding) {
        this.onOversize(this.pendingHead, this.discardedBytes, this.pendingTail.toString('utf8'));
        this.pendingTail = Buffer.alloc(0);
        this.discarding = false;
        this.discardedBytes = 0;
      } else {
        const line = this.chunks.length === 1 ? this.chunks[0]!.toString('utf8') : Buffer.concat(this.chunks).toString('utf8');
        this.chunks = [];
        this.buffered = 0;
        this.onLine(line);
      }
      start = newline + 1;
    }
  }

  private pendingHead = '';
  private pendingTail: Buffer = Buffer.alloc(0);
}

/** How much of the end of an oversize line is kept for onOversize. */
const TAIL_BYTES = 128;
