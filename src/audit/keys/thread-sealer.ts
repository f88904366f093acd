import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { ExecutorError } from '../../domain/errors.js';
import type { KeyProtection, SecretSealer } from './key-store.js';

/*
 * A synchronous SecretSealer for a worker thread whose real sealer lives on the parent thread.
 * Electron's safeStorage exists only on the main process's main thread, while the host (and its
 * KeyStore, whose read/write are synchronous because the key ratchet writes mid-append) runs on a
 * worker. So the worker writes its request into a SharedArrayBuffer, rings the parent over a
 * MessagePort and blocks in Atomics.wait; the parent seals or unseals with the real sealer, writes
 * the reply into the same buffer and Atomics.notify's. A parent that never answers (dead, or its
 * thread stuck) costs the worker a typed AUDIT_KEY_UNAVAILABLE after the timeout, not a hang.
 *
 * The buffer: a header of four Int32 slots, then the data area.
 *   STATE   IDLE → REQUEST (worker, after writing the request) → REPLY (parent) → IDLE (worker)
 *   OP      on a request: SEAL or UNSEAL; on a reply: OK or FAILED (data is then a UTF-8 message)
 *   LENGTH  bytes used in the data area
 *   SEQ     the request's number; the reply carries it back, so a late reply is never mistaken
 * One request at a time: the worker is blocked while it waits, so there is never a second.
 */

const STATE = 0;
const OP = 1;
const LENGTH = 2;
const SEQ = 3;
const HEADER_BYTES = 4 * Int32Array.BYTES_PER_ELEMENT;

const IDLE = 0;
const REQUEST = 1;
const REPLY = 2;

const SEAL = 1;
const UNSEAL = 2;
const OK = 0;
const FAILED = 1;

/** The key state (a JSON of hex keys that grows by a few hundred bytes per key chain) sealed, with ample room. */
export const THREAD_SEALER_CAPACITY_BYTES = 1024 * 1024;
/** Long enough for a keychain that asks the person to unlock it; short enough that a dead parent is noticed. */
export const THREAD_SEALER_TIMEOUT_MS = 60_000;

/** What the worker needs (all of it passes in workerData; the port in the transfer list). */
export interface ThreadSealerLine {
  buffer: SharedArrayBuffer;
  port: MessagePort;
  protection: KeyProtection;
  warning: string | null;
  timeoutMs: number;
}

export interface ThreadSealerService {
  line: ThreadSealerLine;
  /** Pass as the Worker's transferList: the port moves to the worker. */
  transferList: MessagePort[];
  /** Stops serving; a worker still asking then times out. */
  stop(): void;
}

/**
 * The parent's side: serves seal/unseal requests from one worker with the real sealer. Call before
 * creating the Worker and hand it `line` in workerData. The parent thread must stay responsive: a
 * request waits for its event loop.
 */
export function serveThreadSealer(sealer: SecretSealer, options: { timeoutMs?: number; capacityBytes?: number } = {}): ThreadSealerService {
  const capacity = options.capacityBytes ?? THREAD_SEALER_CAPACITY_BYTES;
  const buffer = new SharedArrayBuffer(HEADER_BYTES + capacity);
  const header = new Int32Array(buffer, 0, 4);
  const data = new Uint8Array(buffer, HEADER_BYTES);
  const { port1: parentPort, port2: workerPort } = new MessageChannel();

  const reply = (status: number, bytes: Uint8Array) => {
    data.set(bytes);
    header[OP] = status;
    header[LENGTH] = bytes.byteLength;
    Atomics.store(header, STATE, REPLY);
    Atomics.notify(header, STATE);
  };

  parentPort.on('message', (seq: unknown) => {
    // A doorbell for a request the worker has since given up on (it timed out) is not answered.
    if (Atomics.load(header, STATE) !== REQUEST || header[SEQ] !== seq) return;
    const input = data.slice(0, header[LENGTH]);
    try {
      const output = header[OP] === SEAL ? sealer.seal(input) : header[OP] === UNSEAL ? sealer.unseal(input) : undefined;
      if (!output) throw new Error(`unknown sealer request ${header[OP]}`);
      if (output.byteLength > capacity) throw new Error(`the result (${output.byteLength} bytes) exceeds the ${capacity}-byte line`);
      reply(OK, output);
    } catch (error) {
      const message = Buffer.from(error instanceof Error ? error.message : String(error)).subarray(0, Math.min(capacity, 4096));
      reply(FAILED, message);
    }
  });
  // The Electron main process (or a test) decides when it ends; the line does not keep it alive.
  parentPort.unref();

  return {
    line: {
      buffer,
      port: workerPort,
      protection: sealer.protection,
      warning: sealer.warning,
      timeoutMs: options.timeoutMs ?? THREAD_SEALER_TIMEOUT_MS,
    },
    transferList: [workerPort],
    stop: () => parentPort.close(),
  };
}

/** The worker's side: a SecretSealer whose every call blocks until the parent answers (or the timeout). */
export function threadSealer(line: ThreadSealerLine): SecretSealer {
  const header = new Int32Array(line.buffer, 0, 4);
  const data = new Uint8Array(line.buffer, HEADER_BYTES);
  let nextSeq = 1;
  // After a timeout the parent may still write a late reply into the buffer: the line is not reused.
  let broken: ExecutorError | null = null;

  const call = (op: number, input: Uint8Array): Uint8Array => {
    if (broken) throw broken;
    if (input.byteLength > data.byteLength) {
      throw new ExecutorError(
        'AUDIT_KEY_UNAVAILABLE',
        `A key of ${input.byteLength} bytes does not fit the ${data.byteLength}-byte line to the app's keychain.`,
      );
    }
    const seq = nextSeq++;
    data.set(input);
    header[OP] = op;
    header[LENGTH] = input.byteLength;
    header[SEQ] = seq;
    Atomics.store(header, STATE, REQUEST);
    line.port.postMessage(seq);
    if (Atomics.wait(header, STATE, REQUEST, line.timeoutMs) === 'timed-out') {
      broken = new ExecutorError(
        'AUDIT_KEY_UNAVAILABLE',
        `The Executor app's OS keychain did not answer within ${line.timeoutMs / 1000} s; the audit keys cannot be read or written. Restart the app.`,
      );
      throw broken;
    }
    const output = data.slice(0, header[LENGTH]);
    const failed = header[OP] === FAILED;
    Atomics.store(header, STATE, IDLE);
    if (failed) throw new ExecutorError('AUDIT_KEY_UNAVAILABLE', `The OS keychain refused: ${Buffer.from(output).toString('utf8')}`);
    return output;
  };

  return {
    seal: (plain) => call(SEAL, plain),
    unseal: (sealed) => call(UNSEAL, sealed),
    protection: line.protection,
    warning: line.warning,
  };
}
