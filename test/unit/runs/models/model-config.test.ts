import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../../src/domain/errors.js';
import { checkedApiKey, ModelSettingsSchema } from '../../../../src/domain/model-settings.js';
import { PolicySchema } from '../../../../src/policy/policy-file.js';
import {
  apiKeyFromEnvironment,
  effectiveModelSettings,
  modelClientForRun,
  type ModelSettingsSource,
} from '../../../../src/runs/models/model-config.js';

function source(model: unknown, keys: Record<string, string> = {}): ModelSettingsSource {
  return { getPolicy: () => ({ model: model as never }), modelApiKey: (provider) => keys[provider] };
}

function thrown(work: () => unknown): ExecutorError {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(ExecutorError);
    return error as ExecutorError;
  }
  throw new Error('expected an error');
}

describe('model settings in policy.json', () => {
  it('accepts a model and keeps the policy valid without one', () => {
    expect(PolicySchema.parse({}).model).toBeUndefined();
    const policy = PolicySchema.parse({
      model: {
        provider: 'openai',
        baseUrl: 'http://127.0.0.1:11434/v1',
        model: 'llama3.1',
        stream: true,
        timeoutMs: 60_000,
        maxRetries: 2,
      },
    });
    expect(policy.model).toEqual({
      provider: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      model: 'llama3.1',
      stream: true,
      timeoutMs: 60_000,
      maxRetries: 2,
    });
  });

  it('refuses a key in the policy, saying where keys go', () => {
    for (const field of ['apiKey', 'api_key', 'token']) {
      const parsed = PolicySchema.safeParse({ model: { provider: 'openai', model: 'm', [field]: 'sk-secret-123456' } });
      expect(parsed.success).toBe(false);
      const text = JSON.stringify(parsed.error!.issues);
      expect(text).toContain('executor model set-key');
      expect(text).not.toContain('sk-secret-123456');
    }
  });

  it('refuses what no server would answer: another scheme, a password in the address, an unknown provider, no model name, out-of-range numbers', () => {
    const bad = [
      { provider: 'openai', baseUrl: 'file:///etc/passwd', model: 'm' },
      { provider: 'openai', baseUrl: 'http://user:sk-pass@host/v1', model: 'm' },
      { provider: 'openai', baseUrl: 'not a url', model: 'm' },
      { provider: 'gemini', model: 'm' },
      { provider: 'openai', model: '   ' },
      { provider: 'openai' },
      { provider: 'openai', model: 'm', timeoutMs: 5 },
      { provider: 'openai', model: 'm', maxRetries: 1000 },
      { provider: 'openai', model: 'm', extra: true },
    ];
    for (const settings of bad) expect(ModelSettingsSchema.safeParse(settings).success, JSON.stringify(settings)).toBe(false);
  });
});

describe('checkedApiKey', () => {
  it('drops surrounding white space and a trailing newline', () => {
    expect(checkedApiKey('  sk-abc123\n')).toBe('sk-abc123');
  });
  it('refuses an empty key, one with spaces or control characters inside, or one too long, never quoting it', () => {
    for (const key of ['', '   \n', 'sk-abc def', 'sk-abc\u0000x', 'sk-é', 'x'.repeat(5000)]) {
      const error = thrown(() => checkedApiKey(key));
      expect(error.code).toBe('INVALID_INPUT');
      if (key.trim().length > 3) expect(error.message).not.toContain(key.trim().slice(0, 8));
    }
  });
});

describe('modelClientForRun', () => {
  it('says what to set when no model is configured', () => {
    const error = thrown(() => modelClientForRun(source(undefined)));
    expect(error.code).toBe('MODEL_NOT_CONFIGURED');
    expect(error.message).toContain('executor model set');
  });

  it('says a key is missing for a public API before any call, and accepts a local server without one', () => {
    const error = thrown(() => modelClientForRun(source({ provider: 'anthropic', model: 'claude-x' })));
    expect(error.code).toBe('MODEL_NOT_CONFIGURED');
    expect(error.message).toContain('executor model set-key --provider anthropic');
    expect(error.message).toContain('ANTHROPIC_API_KEY');
    expect(thrown(() => modelClientForRun(source({ provider: 'openai', model: 'gpt-x' }))).code).toBe('MODEL_NOT_CONFIGURED');
    const local = modelClientForRun(source({ provider: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama3.1' }));
    expect(local).toMatchObject({ provider: 'openai', model: 'llama3.1' });
  });

  it('uses the key kept for the provider, or the one the run brings', () => {
    expect(modelClientForRun(source({ provider: 'anthropic', model: 'c' }, { anthropic: 'sk-ant-kept' })).provider).toBe('anthropic');
    expect(modelClientForRun(source({ provider: 'anthropic', model: 'c' }), { apiKey: 'sk-ant-env' }).provider).toBe('anthropic');
  });

  it('a run naming another provider takes neither the saved address nor the saved model name', () => {
    const saved = { provider: 'openai' as const, baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama3.1', timeoutMs: 5000 };
    expect(effectiveModelSettings(saved, { provider: 'anthropic', model: 'claude-x' })).toEqual({
      provider: 'anthropic',
      model: 'claude-x',
      timeoutMs: 5000,
    });
    const error = thrown(() => effectiveModelSettings(saved, { provider: 'anthropic' }));
    expect(error.code).toBe('MODEL_NOT_CONFIGURED');
    expect(error.message).toContain('--provider anthropic --model NAME');
    expect(effectiveModelSettings(saved, { model: 'qwen2.5' })).toEqual({ ...saved, model: 'qwen2.5' });
  });

  it("reads a one-run key from the provider's usual variable", () => {
    expect(apiKeyFromEnvironment('openai', { OPENAI_API_KEY: ' sk-1 \n' })).toBe('sk-1');
    expect(apiKeyFromEnvironment('anthropic', { OPENAI_API_KEY: 'sk-1' })).toBeUndefined();
    expect(apiKeyFromEnvironment('anthropic', { ANTHROPIC_API_KEY: '' })).toBeUndefined();
  });
});
