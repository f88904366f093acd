import { ExecutorError } from '../domain/errors.js';
import { describeIssues } from '../domain/plan-parse.js';
import type { Executor } from '../executor/executor.js';
import { HANDLERS, type CallContext } from './handlers.js';
import { channelMayCall, isMethodName, METHODS, type MethodName } from './methods.js';
import { requestInputRefusal } from './protocol.js';

/**
 * Methods that change state run one at a time per Executor: an approval arriving from the window
 * while a plan proposed over the socket is still being previewed waits its turn instead of
 * interleaving with it. Reads never wait.
 */
const MUTATING: ReadonlySet<MethodName> = new Set<MethodName>(['propose', 'simulateStep', 'approve', 'approveAndRemember', 'reject', 'cancel', 'executeStep', 'revertStep', 'setPolicy']);

const queues = new WeakMap<Executor, Promise<unknown>>();

function serialized<T>(executor: Executor, work: () => Promise<T>): Promise<T> {
  const previous = queues.get(executor) ?? Promise.resolve();
  const next = previous.then(work, work);
  queues.set(executor, next.catch(() => undefined));
  return next;
}

/**
 * The one way a call reaches the core, for every transport and for the in-process client:
 * known method, a channel allowed to call it, params that pass the method's schema. Anything
 * else is refused with a typed error before the Executor sees it.
 */
export async function invokeMethod(executor: Executor, name: string, rawParams: unknown, context: CallContext): Promise<unknown> {
  if (!isMethodName(name)) {
    throw new ExecutorError('IPC_UNKNOWN_METHOD', `There is no method "${name.slice(0, 128)}".`, { method: name.slice(0, 128) });
  }
  if (!channelMayCall(context.channel, name)) {
    throw new ExecutorError('IPC_FORBIDDEN', `The ${context.channel} channel may not call ${name}: only the person decides that, from the window, the web UI or the CLI.`, {
      method: name,
      channel: context.channel,
    });
  }
  // In-process callers (localClient) reach here without a transport: the same check the server runs first.
  const inputRefusal = requestInputRefusal({ method: name, params: rawParams });
  if (inputRefusal) throw inputRefusal;
  const parsed = METHODS[name].params.safeParse(rawParams);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    throw new ExecutorError('IPC_INVALID_PARAMS', `Bad params for ${name}: ${issues.join('; ')}`, { method: name, issues });
  }
  const handler = HANDLERS[name] as (executor: Executor, params: unknown, context: CallContext) => unknown;
  const run = async () => handler(executor, parsed.data, context);
  return MUTATING.has(name) ? serialized(executor, run) : run();
}
