import { ExecutorError } from '../../domain/errors.js';
import { describeIssues } from '../../domain/plan-parse.js';
import type { IpcExecutorPort } from './executor-port.js';
import { HANDLERS, type CallContext } from './handlers.js';
import { boundedForWindow } from '../../domain/step-record-cut.js';
import { channelMayCall, isMethodName, METHODS } from '../protocol/methods.js';
import { requestInputRefusal } from '../protocol/protocol.js';

/*
 * No queue here: the Executor serializes what must not interleave per plan (src/executor/plan-lock.ts),
 * so a long container run in one plan never holds up another plan's proposal, decision or any read.
 */

/**
 * The one way a call reaches the core, for every transport and for the in-process client:
 * known method, a channel allowed to call it, params that pass the method's schema. Anything
 * else is refused with a typed error before the Executor sees it.
 */
export async function invokeMethod(executor: IpcExecutorPort, name: string, rawParams: unknown, context: CallContext): Promise<unknown> {
  if (!isMethodName(name)) {
    throw new ExecutorError('IPC_UNKNOWN_METHOD', `There is no method "${name.slice(0, 128)}".`, { method: name.slice(0, 128) });
  }
  if (!channelMayCall(context.channel, name)) {
    throw new ExecutorError(
      'IPC_FORBIDDEN',
      `The ${context.channel} channel may not call ${name}: only the person decides that, from the window, the web UI or the CLI.`,
      {
        method: name,
        channel: context.channel,
      },
    );
  }
  // In-process callers (localClient) reach here without a transport: the same check the server runs first.
  const inputRefusal = requestInputRefusal({ method: name, params: rawParams });
  if (inputRefusal) throw inputRefusal;
  const parsed = METHODS[name].params.safeParse(rawParams);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    throw new ExecutorError('IPC_INVALID_PARAMS', `Bad params for ${name}: ${issues.join('; ')}`, { method: name, issues });
  }
  const handler = HANDLERS[name] as (executor: IpcExecutorPort, params: unknown, context: CallContext) => unknown;
  const result = await handler(executor, parsed.data, context);
  // The window's replies stay under 64 KiB (a large one stalls every other reply on its connection): a step record in one is cut and says so.
  return context.channel === 'web' || context.channel === 'window' ? boundedForWindow(result) : result;
}
