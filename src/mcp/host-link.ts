import { ExecutorError } from '../domain/errors.js';
import type { ExecutorClient } from '../ipc/client/client.js';

/**
 * How long a tool waits for the person's decision before it answers PENDING. Here, not in
 * mcp-server.ts, so `executor mcp --help` can name it without loading the MCP SDK.
 */
export const DEFAULT_WAIT_SECONDS = 120;

/** Opens a session with the running host as the agent, or null when no host listens. */
export type OpenAgentSession<C extends HostLinkClient = ExecutorClient> = (client: string) => Promise<C | null>;

/** What the link itself asks of a session; the hook's lean client (src/hooks/hook-client.ts) has it too. */
export type HostLinkClient = Pick<ExecutorClient, 'getPolicy' | 'agentIdentity' | 'close'>;

/** Thrown when no host runs: the tool result says so and how to start one, and nothing else happens. */
export class NoHostError extends ExecutorError {
  /**
   * @param duringCall the host went away while the call was with it: what the call sent may have
   *   been recorded (and may have run), so the words must not say nothing happened.
   */
  constructor(
    cause?: string,
    readonly duringCall = false,
  ) {
    super('IPC_UNAVAILABLE', cause ? `Executor is not reachable: ${cause}` : 'Executor is not running.');
  }
}

/**
 * The MCP server's one session with the host, opened on first use (after the MCP handshake, so it
 * carries the client's name as a label) and again after the host went away and came back. It never
 * opens the database itself: without a host there is nobody to ask the person, so nothing may happen.
 *
 * The agent's identity is the one the host issued to the first session. Every later session
 * presents its credential to be that agent again, so this process keeps seeing its own steps across
 * reconnects and host restarts; the credential lives in this process's memory only.
 */
export class HostLink<C extends HostLinkClient = ExecutorClient> {
  private session: C | null = null;
  private agentCredential: string | null;

  /**
   * `remembered` carries an identity across processes (an outside agent's hook runs once per tool
   * call): the credential an earlier process kept, and where to keep a newly issued one.
   */
  constructor(
    private readonly open: OpenAgentSession<C>,
    private readonly clientName: () => string,
    private readonly remembered?: {
      credential: string | null;
      keep(credential: string): void;
      /**
       * The client-and-folder family a new session joins (a hook's: agent-identity.ts), so rules the
       * person remembers hold across that client's sessions there; absent for an MCP process.
       */
      family?: { credential: string | null; keep(credential: string): void };
    },
  ) {
    this.agentCredential = remembered?.credential ?? null;
  }

  /**
   * Runs `work` with a live session. A session whose connection the host closed answers even a
   * cheap read with IPC_UNAVAILABLE; that probe, not the real call, finds out, so a proposal is
   * never sent twice.
   */
  async use<T>(work: (api: C) => Promise<T>): Promise<T> {
    if (this.session) {
      try {
        await this.session.getPolicy();
      } catch (error) {
        if (!(error instanceof ExecutorError && error.code === 'IPC_UNAVAILABLE')) throw error;
        this.drop();
      }
    }
    if (!this.session) {
      let opened: C | null;
      try {
        opened = await this.open(this.clientName());
      } catch (error) {
        throw new NoHostError((error as Error).message);
      }
      if (!opened) throw new NoHostError();
      try {
        await this.identify(opened);
      } catch (error) {
        opened.close();
        if (error instanceof ExecutorError && error.code === 'IPC_UNAVAILABLE') throw new NoHostError(error.message);
        throw error;
      }
      this.session = opened;
    }
    try {
      return await work(this.session);
    } catch (error) {
      if (error instanceof ExecutorError && error.code === 'IPC_UNAVAILABLE') {
        this.drop();
        throw new NoHostError(`the connection closed during the call (${error.message})`, true);
      }
      throw error;
    }
  }

  /** Becomes the agent this process was before, or, the first time, keeps the identity the host just issued. */
  private async identify(api: C): Promise<void> {
    if (this.agentCredential) {
      try {
        await api.agentIdentity({ resume: this.agentCredential });
        return;
      } catch (error) {
        // The host no longer knows the credential (its identity key was replaced): this process is a new agent from here on.
        if (!(error instanceof ExecutorError && error.code === 'AGENT_CREDENTIAL_INVALID')) throw error;
      }
    }
    const family = this.remembered?.family;
    let issued;
    if (!family) issued = await api.agentIdentity({});
    else {
      try {
        issued = await api.agentIdentity(family.credential ? { family: family.credential } : { newFamily: true });
      } catch (error) {
        // A family this host no longer knows (its identity key was replaced): a new family from here on.
        if (!(error instanceof ExecutorError && error.code === 'AGENT_CREDENTIAL_INVALID')) throw error;
        issued = await api.agentIdentity({ newFamily: true });
      }
      if (issued.family && issued.family !== family.credential) family.keep(issued.family);
    }
    this.agentCredential = issued.credential;
    this.remembered?.keep(this.agentCredential);
  }

  drop(): void {
    this.session?.close();
    this.session = null;
  }
}
