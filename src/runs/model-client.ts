/**
 * The one seam between the run loop and a model provider. The loop speaks only these types; each
 * provider (OpenAI-compatible Chat Completions, Anthropic Messages) maps them to and from its wire
 * format, so a conversation stored in SQLite can be replayed to either after a restart.
 */

/** A tool the model may call: a name and a JSON Schema of its arguments. */
export interface ModelTool {
  name: string;
  description: string;
  /** JSON Schema (an object schema) of the arguments. */
  parameters: Record<string, unknown>;
}

/** One tool call as the model made it. `arguments` is the raw text the model sent (it may not be JSON). */
export interface ModelToolCall {
  /** The provider's id for the call (OpenAI `call_…`, Anthropic `toolu_…`); the result must name it. */
  id: string;
  name: string;
  arguments: string;
}

/** The conversation, provider-neutral. */
export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls: ModelToolCall[] }
  | { role: 'tool'; toolCallId: string; toolName: string; content: string; isError: boolean };

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

/** What one model turn returned. */
export interface ModelTurn {
  text: string;
  toolCalls: ModelToolCall[];
  usage: ModelUsage;
  /** `stop` (done, no tool calls), `tool_calls`, `length` (cut by max tokens), or the provider's own word. */
  finishReason: string;
  /** The model that answered, as the provider names it. */
  model: string;
  /**
   * The exact request and response bodies as sent and received (a streamed response as the list of
   * its events), for the `run.turn` audit record's hashes. Never contains the API key.
   */
  requestBody: string;
  responseBody: string;
}

export interface ModelTurnRequest {
  messages: ModelMessage[];
  tools: ModelTool[];
  /** Aborts the HTTP call (the run was cancelled). */
  signal: AbortSignal;
  maxOutputTokens?: number;
  /** Called as streamed text arrives (streaming providers only), for the window's live view. */
  onText?: (delta: string) => void;
}

export interface ModelClient {
  readonly provider: 'openai' | 'anthropic';
  readonly model: string;
  /**
   * One turn. Retries 429 and 5xx with backoff (honouring Retry-After) inside; throws an
   * ExecutorError (MODEL_UNAVAILABLE, MODEL_REFUSED, MODEL_TIMEOUT, RUN_CANCELLED) otherwise, whose message
   * never contains the API key.
   */
  turn(request: ModelTurnRequest): Promise<ModelTurn>;
}

/** How a person configures a model: in Settings / policy.json, or for one run on the CLI. */
export interface ModelSettings {
  provider: 'openai' | 'anthropic';
  /** e.g. http://127.0.0.1:11434/v1 for Ollama; the provider's public API when absent. */
  baseUrl?: string;
  model: string;
  stream?: boolean;
  /** Per-request timeout. */
  timeoutMs?: number;
  maxRetries?: number;
}
