import net from 'node:net';

export interface RawAnswer {
  /** The status code of the first response line, or null when the server closed without one. */
  status: number | null;
  head: string;
}

/**
 * Writes raw bytes to a TCP port, as a hostile client would (nothing is checked or encoded), and
 * reads the first response line. `reset` tears the connection down right after writing, so the
 * server answers into a dead socket.
 */
export function rawExchange(
  port: number,
  bytes: Buffer | string,
  options: { timeoutMs?: number; reset?: boolean } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let settled = false;
    const finish = (answer: RawAnswer | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (answer instanceof Error) reject(answer);
      else resolve(answer);
    };
    const answer = (): RawAnswer => {
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(received);
      return { status: match ? Number(match[1]) : null, head: received.slice(0, 300) };
    };
    const timer = setTimeout(
      () => finish(new Error(`no answer within ${options.timeoutMs ?? 10_000} ms to ${JSON.stringify(String(bytes).slice(0, 120))}`)),
      options.timeoutMs ?? 10_000,
    );
    socket.on('connect', () => {
      socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
      if (options.reset) {
        socket.resetAndDestroy();
        finish({ status: null, head: '' });
      }
    });
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n')) finish(answer());
    });
    socket.on('error', () => finish(answer()));
    socket.on('close', () => finish(answer()));
  });
}
