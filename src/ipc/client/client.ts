import { ExecutorError, type ErrorShape } from '../../domain/errors.js';
import { METHOD_NAMES, METHODS, type IpcChannel, type MethodName, type MethodParams, type MethodResult } from '../protocol/methods.js';
import { EVENT_DATA, type EventData, type EventTopic } from '../protocol/wire-schemas.js';
import { remoteError, type PresignedCall, type SignedRpc } from './signed-rpc.js';

export { openSession, remoteError, SignedRpc, type ClientTransport, type PresignedCall, type SessionKeys } from './signed-rpc.js';

/*
 * The typed client, derived from the method table: `client.listSteps({ status: [...] })` has the
 * params and result types of METHODS.listSteps, and its result is checked against the result
 * schema at runtime. Browser-safe; the Node and browser entry points supply the MAC and the bytes.
 */

type ParamsArg<M extends MethodName> = undefined extends MethodParams<M> ? [params?: MethodParams<M>] : [params: MethodParams<M>];

/** One function per method of the table. */
export type ExecutorMethods = { [M in MethodName]: (...args: ParamsArg<M>) => Promise<MethodResult<M>> };

export type EventListener<T extends EventTopic> = (data: EventData<T>) => void;

export interface ExecutorClient extends ExecutorMethods {
  /** The channel the server granted to this client's credential. */
  readonly channel: IpcChannel;
  /** Listens to a topic (subscribing the session on first use); returns the unsubscribe function. */
  on<T extends EventTopic>(topic: T, listener: EventListener<T>): Promise<() => void>;
  /**
   * Signs a call now and returns a function that sends it synchronously (its reply is not awaited),
   * or null where the transport cannot send synchronously (absent on clients that never can: the desktop app's bridge). The signed call stays acceptable for the
   * protocol's clock window (CLOCK_SKEW_MS) and can be sent once: its nonce is spent by the host.
   */
  presign?<M extends MethodName>(method: M, ...args: ParamsArg<M>): Promise<PresignedCall | null>;
  close(): void;
}

/** The typed client over a signed session: one function per method, results checked against the table. */
export function createExecutorClient(rpc: SignedRpc): ExecutorClient {
  const methods = {} as Record<MethodName, (params?: unknown) => Promise<unknown>>;
  for (const name of METHOD_NAMES) {
    methods[name] = async (params?: unknown) => {
      return rpc.call(name, params ?? {}, (result) => METHODS[name].result.safeParse(result));
    };
  }
  const subscribed = new Set<EventTopic>();
  return {
    ...(methods as unknown as ExecutorMethods),
    channel: rpc.session.channel,
    async on<T extends EventTopic>(topic: T, listener: EventListener<T>) {
      const schema = EVENT_DATA[topic];
      const off = rpc.onEvent(topic, (data) => {
        const checked = schema?.safeParse(data);
        if (checked?.success) (listener as (data: unknown) => void)(checked.data);
      });
      if (!subscribed.has(topic)) {
        await rpc.call('subscribe', { topics: [topic] });
        subscribed.add(topic);
      }
      return off;
    },
    presign: (method: MethodName, params?: unknown) => rpc.presign(method, params ?? {}),
    close: () => rpc.close(),
  };
}

/*
 * Electron's contextBridge copies only an Error's message, so the preload puts the typed error
 * into the message and the page's side (renderer-entry.ts) turns it back into an ExecutorError.
 */
const BRIDGE_ERROR_PREFIX = 'executor-error:';

export function errorForBridge(error: unknown): Error {
  const shape: ErrorShape =
    error instanceof ExecutorError ? error.toJSON() : { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
  return new Error(BRIDGE_ERROR_PREFIX + JSON.stringify(shape));
}

export function errorFromBridge(error: unknown): unknown {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  const start = message.indexOf(BRIDGE_ERROR_PREFIX);
  if (start === -1) return error;
  try {
    return remoteError(JSON.parse(message.slice(start + BRIDGE_ERROR_PREFIX.length)) as ErrorShape);
  } catch {
    return error;
  }
}
