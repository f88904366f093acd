import type { MessagePort } from 'node:worker_threads';
import type { ChildLaunch, ExitInfo, SandboxChild, SpawnChild } from './spawn-child.js';

/*
 * A SpawnChild for code on a worker thread whose real spawner lives on the parent thread. In the
 * app the host runs on a worker thread, but Electron's utilityProcess exists only on the main
 * thread: the thread asks, the parent spawns, and everything the worker says comes back over one
 * MessagePort. The thread side keeps SandboxChild's contract whole, so the pool and the runner
 * cannot tell the difference.
 */

/** Thread → parent. */
export type SpawnRequest =
  | { kind: 'spawn'; id: number; launch: ChildLaunch }
  | { kind: 'send'; id: number; message: unknown }
  | { kind: 'hold'; id: number; holds: boolean }
  | { kind: 'kill'; id: number };

/** Parent → thread. `message` is already a parsed frame (or `{ malformed }`): the real spawner decoded it. */
export type SpawnEvent =
  | { kind: 'spawned'; id: number; pid: number | undefined }
  | { kind: 'message'; id: number; message: unknown }
  | { kind: 'stderr'; id: number; chunk: Uint8Array }
  | { kind: 'exit'; id: number; exit: ExitInfo };

interface BridgedChild {
  pid: number | undefined;
  exit: ExitInfo | undefined;
  holds: boolean;
  messageListeners: ((message: unknown) => void)[];
  exitListeners: ((exit: ExitInfo) => void)[];
  stderrListeners: ((chunk: Buffer) => void)[];
}

/**
 * The thread side. The port is referenced only while some child holds the host: an idle pooled
 * worker must not keep the thread (and so the app) alive, exactly as with a local spawner.
 */
export function threadSpawnChild(port: MessagePort, weakerIsolation: readonly string[] = []): SpawnChild {
  const children = new Map<number, BridgedChild>();
  let nextId = 1;
  let portClosed = false;

  const updateRef = () => {
    if ([...children.values()].some((child) => child.holds)) port.ref();
    else port.unref();
  };
  const ended = (id: number, child: BridgedChild, exit: ExitInfo) => {
    if (child.exit) return;
    child.exit = exit;
    children.delete(id);
    updateRef();
    for (const listener of child.exitListeners.splice(0)) listener(exit);
  };

  port.on('message', (event: SpawnEvent) => {
    const child = children.get(event?.id);
    if (!child || child.exit) return;
    switch (event.kind) {
      case 'spawned':
        child.pid = event.pid;
        return;
      case 'message':
        for (const listener of [...child.messageListeners]) listener(event.message);
        return;
      case 'stderr':
        for (const listener of child.stderrListeners) listener(Buffer.from(event.chunk));
        return;
      case 'exit':
        ended(event.id, child, event.exit);
        return;
    }
  });
  // The parent is gone: every worker it ran for us died with its side of the bridge (serveSpawns kills them).
  port.on('close', () => {
    portClosed = true;
    for (const [id, child] of [...children]) ended(id, child, { code: null, signal: 'SIGKILL' });
  });
  updateRef();

  const post = (request: SpawnRequest) => {
    if (!portClosed) port.postMessage(request);
  };

  const spawn = (launch: ChildLaunch): SandboxChild => {
    const id = nextId++;
    const child: BridgedChild = {
      pid: undefined,
      exit: undefined,
      holds: true,
      messageListeners: [],
      exitListeners: [],
      stderrListeners: [],
    };
    if (portClosed) {
      // Same contract as a spawn that fails: an exit, never a throw.
      child.exit = { code: null, signal: null };
    } else {
      children.set(id, child);
      updateRef();
      post({ kind: 'spawn', id, launch });
    }
    return {
      get pid() {
        return child.pid;
      },
      send(message) {
        if (!child.exit) post({ kind: 'send', id, message });
      },
      onMessage(listener) {
        child.messageListeners.push(listener);
      },
      onExit(listener) {
        if (child.exit) listener(child.exit);
        else child.exitListeners.push(listener);
      },
      onStderr(listener) {
        child.stderrListeners.push(listener);
      },
      setHoldsHost(holds) {
        if (child.exit) return;
        child.holds = holds;
        updateRef();
        post({ kind: 'hold', id, holds });
      },
      kill() {
        // Not waiting for an answer: from here the worker's words are ignored, and the parent kills for real.
        if (!child.exit) post({ kind: 'kill', id });
      },
    };
  };
  // The parent's spawner's own account of what it cannot apply, carried across with it.
  return Object.assign(spawn, { weakerIsolation: [...weakerIsolation] });
}

/**
 * The parent side: runs the thread's spawn requests with the spawner the parent has (forkChild in
 * plain Node, utility processes in Electron) and relays what each worker says, in order, exit last.
 * Returns a stop function that kills every worker it started; the port closing does the same.
 */
export function serveSpawns(port: MessagePort, spawnChild: SpawnChild): () => void {
  const children = new Map<number, SandboxChild>();
  const holding = new Set<number>();
  const post = (event: SpawnEvent) => {
    try {
      port.postMessage(event);
    } catch {
      /* the thread is gone; its workers are being killed */
    }
  };
  const updateRef = () => (holding.size ? port.ref() : port.unref());

  const start = (id: number, launch: ChildLaunch) => {
    let child: SandboxChild;
    try {
      child = spawnChild(launch);
    } catch (error) {
      // A spawner that throws is still a worker that ended before it started, as the pool expects.
      post({ kind: 'stderr', id, chunk: Buffer.from(`the worker could not be spawned: ${(error as Error).message}\n`) });
      post({ kind: 'exit', id, exit: { code: null, signal: null } });
      return;
    }
    children.set(id, child);
    holding.add(id);
    updateRef();
    post({ kind: 'spawned', id, pid: child.pid });
    child.onMessage((message) => post({ kind: 'message', id, message }));
    child.onStderr((chunk) => post({ kind: 'stderr', id, chunk: new Uint8Array(chunk) }));
    child.onExit((exit) => {
      children.delete(id);
      holding.delete(id);
      updateRef();
      post({ kind: 'exit', id, exit });
    });
  };

  const onRequest = (request: SpawnRequest) => {
    if (request === null || typeof request !== 'object' || typeof request.id !== 'number') return;
    switch (request.kind) {
      case 'spawn':
        if (!children.has(request.id)) start(request.id, request.launch);
        return;
      case 'send':
        children.get(request.id)?.send(request.message);
        return;
      case 'hold': {
        const child = children.get(request.id);
        if (!child) return;
        child.setHoldsHost(request.holds);
        if (request.holds) holding.add(request.id);
        else holding.delete(request.id);
        updateRef();
        return;
      }
      case 'kill':
        children.get(request.id)?.kill();
        return;
    }
  };

  const stop = () => {
    port.off('message', onRequest);
    for (const child of children.values()) child.kill();
    children.clear();
    holding.clear();
    port.close();
  };
  port.on('message', onRequest);
  port.once('close', stop);
  updateRef();
  return stop;
}
