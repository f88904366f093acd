import { EventEmitter } from 'node:events';
import { actorFor } from '../domain/actor.js';
import type { Executor } from '../executor/executor.js';
import type { EventListener, ExecutorClient, ExecutorMethods } from './client.js';
import { invokeMethod } from './dispatch.js';
import type { CallContext } from './handlers.js';
import { METHOD_NAMES, type IpcChannel, type MethodName } from './methods.js';
import type { EventTopic } from './wire-schemas.js';

/**
 * The same typed client for a caller in the host's own process (the CLI when no host runs, the
 * MCP server when it opens the database itself). Nothing is signed, as nothing crosses a process,
 * but every call still goes through invokeMethod: the channel's rights and the params schema hold.
 */
export function localClient(executor: Executor, channel: IpcChannel, client?: string): ExecutorClient {
  // Events meant for this caller alone (the progress of its own verifyAudit) never pass through the executor.
  const own = new EventEmitter();
  const context: CallContext = { channel, actor: actorFor(channel, client), subscribe: (topics) => topics, notify: (topic, data) => void own.emit(topic, data) };
  const methods = {} as Record<MethodName, (params?: unknown) => Promise<unknown>>;
  for (const name of METHOD_NAMES) methods[name] = (params?: unknown) => invokeMethod(executor, name, params ?? {}, context);
  const offs: (() => void)[] = [];
  return {
    ...(methods as unknown as ExecutorMethods),
    channel,
    async on<T extends EventTopic>(topic: T, listener: EventListener<T>) {
      const forward = (data: unknown) => listener(data as Parameters<EventListener<T>>[0]);
      // The executor's event names are the topics; its typed emitter cannot see that through the generic.
      const emitter = executor as unknown as NodeJS.EventEmitter;
      emitter.on(topic, forward);
      own.on(topic, forward);
      const off = () => {
        emitter.off(topic, forward);
        own.off(topic, forward);
      };
      offs.push(off);
      return off;
    },
    close: () => {
      for (const off of offs.splice(0)) off();
    },
  };
}
