import { EventEmitter } from 'node:events';
import { actorFor } from '../../domain/actor.js';
import { ExecutorError } from '../../domain/errors.js';
import { AgentIdentities } from './agent-identity.js';
import type { IpcExecutorPort } from './executor-port.js';
import type { EventListener, ExecutorClient, ExecutorMethods } from '../client/client.js';
import { invokeMethod } from './dispatch.js';
import type { CallContext } from './handlers.js';
import { METHOD_NAMES, type IpcChannel, type MethodName } from '../protocol/methods.js';
import { eventVisibleTo } from './server.js';
import type { EventTopic } from '../protocol/wire-schemas.js';
import type { RunService } from '../../runs/run-service.js';

const IN_PROCESS_AGENTS = AgentIdentities.ephemeral();

/**
 * The same typed client for a caller in the host's own process (the CLI when no host runs, the
 * MCP server when it opens the database itself). Nothing is signed, as nothing crosses a process,
 * but every call still goes through invokeMethod: the channel's rights and the params schema hold.
 */
export function localClient(
  executor: IpcExecutorPort,
  channel: IpcChannel,
  client?: string,
  agentIdentities: AgentIdentities = IN_PROCESS_AGENTS,
  runs?: RunService,
): ExecutorClient {
  // Events meant for this caller alone (the progress of its own verifyAudit) never pass through the executor.
  const own = new EventEmitter();
  // Like a socket session, an agent caller is a new agent, with an identity the host side issues, until it resumes an earlier one.
  const context: CallContext = {
    channel,
    actor: channel === 'mcp' ? { ...actorFor(channel, client), agent: agentIdentities.issue().agentId } : actorFor(channel, client),
    subscribe: (topics) => topics,
    notify: (topic, data) => void own.emit(topic, data),
    sameProcess: true,
    ...(runs ? { runs } : {}),
  };
  if (channel === 'mcp') {
    context.agentIdentity = (request) => {
      const issued = agentIdentities.identify(context.actor.agent!, request);
      context.actor = { ...context.actor, agent: issued.agentId };
      return issued;
    };
  }
  const methods = {} as Record<MethodName, (params?: unknown) => Promise<unknown>>;
  for (const name of METHOD_NAMES) methods[name] = (params?: unknown) => invokeMethod(executor, name, params ?? {}, context);
  const offs: (() => void)[] = [];
  return {
    ...(methods as unknown as ExecutorMethods),
    channel,
    async on<T extends EventTopic>(topic: T, listener: EventListener<T>) {
      const forward = (data: unknown) => {
        if (eventVisibleTo(context.actor, topic, data)) listener(data as Parameters<EventListener<T>>[0]);
      };
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
