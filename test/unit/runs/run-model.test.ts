import { describe, expect, it } from 'vitest';
import { PolicySchema } from '../../../src/policy/policy-file.js';
import { modelSettingsFor } from '../../../src/runs/run-model.js';

const policy = (extra: Record<string, unknown> = {}) => PolicySchema.parse(extra);

describe('which model a run uses', () => {
  it('is none without Settings or an override', () => {
    expect(modelSettingsFor(policy(), undefined)).toBeNull();
  });

  it('is the one-run override, keeping the timeouts of Settings for the same provider only', () => {
    const withSettings = policy({ model: { provider: 'openai', model: 'gpt-4o-mini', timeoutMs: 5000, stream: true } });
    expect(modelSettingsFor(withSettings, undefined)).toEqual({ provider: 'openai', model: 'gpt-4o-mini', timeoutMs: 5000, stream: true });
    expect(modelSettingsFor(withSettings, { provider: 'openai', model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1' })).toMatchObject({
      provider: 'openai',
      model: 'llama3.1',
      baseUrl: 'http://127.0.0.1:11434/v1',
      timeoutMs: 5000,
    });
    expect(modelSettingsFor(withSettings, { provider: 'anthropic', model: 'claude' })).toEqual({ provider: 'anthropic', model: 'claude' });
  });

  it('refuses a Settings model the policy cannot hold (a key in it above all)', () => {
    expect(() => policy({ model: { provider: 'nope', model: 'x' } })).toThrow();
    expect(() => policy({ model: { provider: 'openai', model: 'x', apiKey: 'sk-1' } })).toThrow();
  });
});
