import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
// The zod-free list (run-names.ts): `executor --help` loads nothing but commander.
import { MODEL_PROVIDERS } from '../../domain/run-names.js';
import type { ModelCheck, ModelProvider, ModelSettingsInput, ModelSettingsView } from '../../domain/model-settings.js';
import { globals, print, withExecutor } from '../cli-context.js';

/** model show|set|set-key|check: the person's model that agent runs talk to. */
export function registerModelCommands(program: Command): void {
  const model = program
    .command('model')
    .description(
      'the model agent runs talk to: any OpenAI-compatible server (Ollama, LM Studio, llama.cpp, vLLM, OpenAI, OpenRouter) or Anthropic',
    );

  model
    .command('show')
    .description('the model runs use and whether a key is kept (never the key)')
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const view = await withExecutor(dataDir, (api) => api.getModelSettings());
      print(json, view, () => viewText(view));
    });

  model
    .command('set')
    .description('name the model runs use; options not given keep their saved value (the key is set apart, with set-key)')
    .option('--provider <provider>', `openai (any OpenAI-compatible server) or anthropic`)
    .option(
      '--base-url <url>',
      'the server\'s address, e.g. http://127.0.0.1:11434/v1 for Ollama; "default" for the provider\'s public API',
    )
    .option('--model <name>', 'the model name as the server knows it, e.g. llama3.1')
    .option('--stream', 'stream answers (the window shows them as they come)')
    .option('--no-stream', 'ask for whole answers')
    .option('--timeout-ms <ms>', 'how long the model may take to start answering, or stay silent mid-answer', (value) =>
      wholeNumber(value, '--timeout-ms'),
    )
    .option('--max-retries <n>', 'retries of a 429, 5xx or dropped connection', (value) => wholeNumber(value, '--max-retries'))
    .option('--clear', 'forget the model (runs then refuse with MODEL_NOT_CONFIGURED)')
    .action(
      async (
        options: {
          provider?: string;
          baseUrl?: string;
          model?: string;
          stream?: boolean;
          timeoutMs?: number;
          maxRetries?: number;
          clear?: boolean;
        },
        command: Command,
      ) => {
        const { dataDir, json } = globals(command);
        const view = await withExecutor(dataDir, async (api) => {
          if (options.clear) return api.setModelSettings({ settings: null });
          const saved = (await api.getModelSettings()).settings;
          const provider = options.provider ?? saved?.provider;
          if (provider === undefined)
            throw new ExecutorError(
              'INVALID_INPUT',
              'Name the provider the first time: --provider openai (any OpenAI-compatible server, such as Ollama) or --provider anthropic.',
            );
          // A new provider starts from nothing: the saved address and model name were the other provider's.
          const base: Partial<ModelSettingsInput> = saved && saved.provider === provider ? saved : {};
          const settings: Record<string, unknown> = { ...base, provider };
          if (options.baseUrl !== undefined)
            settings.baseUrl = options.baseUrl === 'default' || options.baseUrl === '' ? undefined : options.baseUrl;
          if (options.model !== undefined) settings.model = options.model;
          if (options.stream !== undefined) settings.stream = options.stream;
          if (options.timeoutMs !== undefined) settings.timeoutMs = options.timeoutMs;
          if (options.maxRetries !== undefined) settings.maxRetries = options.maxRetries;
          if (settings.model === undefined)
            throw new ExecutorError(
              'INVALID_INPUT',
              `Name the model too: --model NAME (as ${provider === 'anthropic' ? 'Anthropic' : 'the server'} knows it, e.g. ${provider === 'anthropic' ? 'claude-sonnet-4-5' : 'llama3.1'}).`,
            );
          for (const name of Object.keys(settings)) if (settings[name] === undefined) delete settings[name];
          return api.setModelSettings({ settings: settings as ModelSettingsInput });
        });
        print(json, view, () => viewText(view));
      },
    );

  model
    .command('set-key')
    .description(
      'keep the API key, sealed beside the audit keys; read from stdin (e.g. `pass show openai | executor model set-key`) or typed at a hidden prompt — never from the command line',
    )
    .option('--provider <provider>', 'whose key (default: the provider of the saved model)')
    .option('--clear', 'erase the kept key')
    .action(async (options: { provider?: string; clear?: boolean }, command: Command) => {
      const { dataDir, json } = globals(command);
      const view = await withExecutor(dataDir, async (api) => {
        const provider = options.provider ?? (await api.getModelSettings()).settings?.provider;
        if (provider === undefined)
          throw new ExecutorError(
            'INVALID_INPUT',
            'Say whose key this is: --provider openai or --provider anthropic (or set the model first with `executor model set`).',
          );
        if (!MODEL_PROVIDERS.includes(provider as ModelProvider))
          throw new ExecutorError('INVALID_INPUT', `Unknown provider "${provider.slice(0, 50)}": use openai or anthropic.`);
        const key = options.clear ? null : await readKey();
        return api.setModelKey({ provider: provider as ModelProvider, key });
      });
      print(json, view, () => (options.clear ? 'Key erased.\n' : 'Key kept.\n') + viewText(view));
    });

  model
    .command('check')
    .description('make one tiny call to the model and say plainly whether it answers, or what is wrong')
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const check = await withExecutor(dataDir, (api) => api.checkModel());
      print(json, check, () => checkText(check));
      if (!check.ok) process.exitCode = 1;
    });
}

function wholeNumber(value: string, option: string): number {
  if (!/^\d+$/.test(value)) throw new ExecutorError('INVALID_INPUT', `${option} takes a whole number, not "${value.slice(0, 40)}".`);
  return Number(value);
}

/** The key from stdin when it is piped, else typed at a prompt that does not echo it. */
async function readKey(): Promise<string> {
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text.trim())
      throw new ExecutorError(
        'INVALID_INPUT',
        'No key arrived on stdin. Pipe it in (`pass show openai | executor model set-key`), or run the command in a terminal to type it.',
      );
    return text;
  }
  return hiddenPrompt('API key (not shown): ');
}

function hiddenPrompt(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    let typed = '';
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const done = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (data: string) => {
      for (const char of data) {
        if (char === '\r' || char === '\n') return done();
        if (char === '\u0003') return done(new ExecutorError('INVALID_INPUT', 'Cancelled; no key was kept.'));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    stdin.on('data', onData);
  });
}

function viewText(view: ModelSettingsView): string {
  const keyWords = (provider: ModelProvider) =>
    view.keySet[provider]
      ? `kept (${view.keyProtection === 'os-keychain' ? 'sealed by the OS keychain' : 'a file only you can read'})`
      : 'none';
  if (!view.settings) {
    return [
      'No model is set up. For Ollama: executor model set --provider openai --base-url http://127.0.0.1:11434/v1 --model llama3.1',
      `keys       openai: ${keyWords('openai')}, anthropic: ${keyWords('anthropic')}`,
    ].join('\n');
  }
  const s = view.settings;
  return [
    `provider   ${s.provider}`,
    `address    ${s.baseUrl ?? `the public ${s.provider === 'openai' ? 'OpenAI' : 'Anthropic'} API`}`,
    `model      ${s.model}`,
    `stream     ${s.stream ? 'yes' : 'no'}`,
    ...(s.timeoutMs !== undefined ? [`timeout    ${s.timeoutMs} ms`] : []),
    ...(s.maxRetries !== undefined ? [`retries    ${s.maxRetries}`] : []),
    `key        ${keyWords(s.provider)}`,
  ].join('\n');
}

function checkText(check: ModelCheck): string {
  return check.ok ? `OK: ${check.message}` : `Not working (${check.code}): ${check.message}`;
}
