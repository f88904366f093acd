import { describe, expect, it } from 'vitest';
import {
  RUN_STATUSES,
  RUN_TOOL_GROUP_NAMES,
  RUN_TOOLS,
  TOOL_CALL_OUTCOMES,
  type AgentQuestion,
  type RunSummary,
  type RunTraceEntry,
} from '../../../../src/domain/run.js';
import { almostExpired, timeLeftText } from '../../../../renderer/runs/countdown.js';
import { shownLength } from '../../../../renderer/runs/paged-text.js';
import { applyQuestion } from '../../../../renderer/runs/questions.js';
import {
  callStateText,
  configuredModelOf,
  countersText,
  modelText,
  OUTCOME_LABEL,
  RUN_STATUS_LABEL,
  RUN_STATUS_SENTENCE,
  taskTitle,
  TOOL_WORDS,
} from '../../../../renderer/runs/run-text.js';
import { argumentsText } from '../../../../renderer/runs/run-timeline.js';
import { queueStepFromHash, runFromHash, stepHref } from '../../../../renderer/runs/step-links.js';
import { mergeEntry, stepIdsOf } from '../../../../renderer/runs/use-run-detail.js';
import { mergeRun } from '../../../../renderer/runs/use-runs.js';
import { toolsOfGroups } from '../../../../renderer/runs/new-run-box.js';

const run = (id: string, createdAt: string, updatedAt = createdAt, status: RunSummary['status'] = 'running'): RunSummary => ({
  id,
  task: 'Write notes',
  status,
  model: { provider: 'openai', model: 'qwen2.5-coder', baseUrl: 'http://127.0.0.1:11434/v1' },
  root: '/ws',
  tools: ['write_file'],
  createdAt,
  updatedAt,
  endedAt: null,
  counters: { iterations: 3, toolCalls: 4, inputTokens: 1000, outputTokens: 234, wallMs: 12_000 },
  limits: { maxIterations: 20, maxTokens: 100_000, maxToolCalls: 100, maxWallMs: 3_600_000 },
  endReason: null,
  question: null,
  waitingStepId: null,
  startedBy: { user: 'ada', channel: 'web' },
});

const entry = (iteration: number, stepIds: (string | null)[] = [], text = ''): RunTraceEntry => ({
  iteration,
  model: 'm',
  startedAt: '2026-11-24T19:00:00.000Z',
  latencyMs: 10,
  inputTokens: 1,
  outputTokens: 1,
  finishReason: 'tool_calls',
  text,
  requestHash: 'a'.repeat(64),
  responseHash: 'b'.repeat(64),
  auditSeq: 1,
  toolCalls: stepIds.map((stepId, index) => ({
    callId: `c${iteration}-${index}`,
    name: 'write_file',
    arguments: '{}',
    stepId,
    outcome: null,
    result: null,
    durationMs: null,
  })),
});

describe('runs in words', () => {
  it('every run status and every tool-call outcome has words, never a state name', () => {
    for (const status of RUN_STATUSES) {
      expect(RUN_STATUS_LABEL[status], status).toMatch(/^[A-Z][a-z ]+$/);
      expect(RUN_STATUS_SENTENCE[status], status).not.toContain('_');
    }
    expect(Object.keys(RUN_STATUS_LABEL).sort()).toEqual([...RUN_STATUSES].sort());
    for (const outcome of TOOL_CALL_OUTCOMES) expect(OUTCOME_LABEL[outcome], outcome).toMatch(/^[A-Z][a-z ]+$/);
    for (const tool of RUN_TOOLS) expect(TOOL_WORDS[tool], tool).toMatch(/^[a-z]/);
  });

  it('says counters against limits, and the model with its provider and address', () => {
    expect(countersText(run('r', '2026-11-24T19:00:00Z'))).toBe('3 of 20 iterations · 4 tool calls · 1,234 tokens · 12 s');
    expect(modelText({ provider: 'anthropic', model: 'claude', baseUrl: null })).toBe('claude (Anthropic)');
    expect(modelText({ provider: 'openai', model: 'qwen', baseUrl: 'http://127.0.0.1:11434/v1' })).toBe(
      'qwen (OpenAI-compatible, http://127.0.0.1:11434/v1)',
    );
  });

  it('a call without an outcome says what it waits for', () => {
    expect(callStateText({ outcome: null, name: 'ask_user', stepId: null })).toBe('Waiting for your answer');
    expect(callStateText({ outcome: null, name: 'write_file', stepId: 's1' })).toBe('Waiting for the step');
    expect(callStateText({ outcome: 'REJECTED', name: 'write_file', stepId: 's1' })).toBe('Rejected by you');
  });

  it('titles a task by its first line, marking what is left out, whatever line separator it uses', () => {
    expect(taskTitle('Fix the build')).toBe('Fix the build');
    expect(taskTitle('Fix the build\nthen run tests')).toBe('Fix the build…');
    expect(taskTitle('Fix\u2028hidden second line')).toBe('Fix…');
    expect(taskTitle('x'.repeat(500))).toBe(`${'x'.repeat(160)}…`);
    // Never cut inside an astral character.
    expect(taskTitle('😀'.repeat(200), 3)).toBe('😀😀😀…');
  });

  it('reads the configured model loosely: none set is null, never a crash', () => {
    expect(configuredModelOf(undefined)).toBeNull();
    expect(configuredModelOf({})).toBeNull();
    expect(configuredModelOf({ model: { provider: 'openai', model: '' } })).toBeNull();
    expect(configuredModelOf({ model: { provider: 'anthropic', model: 'claude-x' } })).toEqual({
      provider: 'anthropic',
      model: 'claude-x',
      baseUrl: null,
    });
  });
});

describe('the question countdown', () => {
  const now = Date.parse('2026-11-24T19:00:00.000Z');
  const at = (ms: number) => new Date(now + ms).toISOString();
  it('counts down in words, and says plainly when time is up', () => {
    expect(timeLeftText(at(30 * 60_000), now)).toBe('30 minutes left');
    expect(timeLeftText(at(29 * 60_000 + 5_000), now)).toBe('29 minutes and 5 seconds left');
    expect(timeLeftText(at(61_000), now)).toBe('1 minute and 1 second left');
    expect(timeLeftText(at(45_000), now)).toBe('45 seconds left');
    expect(timeLeftText(at(500), now)).toBe('1 second left');
    expect(timeLeftText(at(3 * 3600_000 + 60_000), now)).toBe('3 hours and 1 minute left');
    expect(timeLeftText(at(5 * 24 * 3600_000), now)).toBe('5 days left');
    expect(timeLeftText(at(0), now)).toBe('time is up: the question has expired');
    expect(timeLeftText(at(-5000), now)).toBe('time is up: the question has expired');
    expect(timeLeftText('not a time', now)).toBe('no time limit known');
    expect(almostExpired(at(30_000), now)).toBe(true);
    expect(almostExpired(at(120_000), now)).toBe(false);
    expect(almostExpired(at(-1), now)).toBe(false);
  });
});

describe('long text is paged', () => {
  it('shows a page at a time and never splits a surrogate pair', () => {
    expect(shownLength('abc', 1, 10)).toBe(3);
    expect(shownLength('a'.repeat(25), 1, 10)).toBe(10);
    expect(shownLength('a'.repeat(25), 3, 10)).toBe(25);
    const text = 'a'.repeat(9) + '😀' + 'b';
    expect(shownLength(text, 1, 10)).toBe(9);
  });

  it('lays out arguments that are JSON, and keeps anything else as the model sent it', () => {
    expect(argumentsText('{"path":"a.txt","content":"x"}')).toBe('{\n  "path": "a.txt",\n  "content": "x"\n}');
    expect(argumentsText('{"path": "a.txt", oops')).toBe('{"path": "a.txt", oops');
    expect(argumentsText('"just a string"')).toBe('"just a string"');
  });
});

describe('keeping lists live', () => {
  it('a newer summary of a run replaces the older, never the reverse; new runs go on top', () => {
    const older = run('r1', '2026-11-24T19:00:00Z', '2026-11-24T19:00:01Z');
    const newer = { ...older, updatedAt: '2026-11-24T19:00:05Z', status: 'completed' as const };
    expect(mergeRun([newer], older)).toEqual([newer]);
    expect(mergeRun([older], newer)).toEqual([newer]);
    const second = run('r2', '2026-11-24T19:01:00Z');
    expect(mergeRun([older], second).map((known) => known.id)).toEqual(['r2', 'r1']);
  });

  it('an iteration is put in its place by number, a newer version of it replacing the older', () => {
    const trace = mergeEntry(mergeEntry([], entry(2)), entry(1));
    expect(trace.map((known) => known.iteration)).toEqual([1, 2]);
    const updated = mergeEntry(trace, entry(2, ['s2'], 'now with text'));
    expect(updated).toHaveLength(2);
    expect(updated[1]!.text).toBe('now with text');
    expect(stepIdsOf([entry(1, ['s1', null]), entry(2, ['s2', 's1'])])).toEqual(['s1', 's2']);
  });

  it('a question asked appears, newest first; one answered, expired or withdrawn goes', () => {
    const question = (id: string, askedAt: string, status: AgentQuestion['status'] = 'waiting'): AgentQuestion => ({
      id,
      text: 'q',
      askedAt,
      expiresAt: '2026-11-24T20:00:00Z',
      runId: null,
      askedBy: 'agent',
      status,
      answer: null,
      answeredAt: null,
    });
    let waiting = applyQuestion([], question('q1', '2026-11-24T19:00:00Z'));
    waiting = applyQuestion(waiting, question('q2', '2026-11-24T19:05:00Z'));
    expect(waiting.map((known) => known.id)).toEqual(['q2', 'q1']);
    for (const status of ['answered', 'expired', 'cancelled'] as const)
      expect(applyQuestion(waiting, question('q1', '2026-11-24T19:00:00Z', status)).map((known) => known.id)).toEqual(['q2']);
  });
});

describe('links between runs and steps', () => {
  it('a step that has not started is shown in the queue, one that has in History', () => {
    expect(stepHref('s-1', 'awaiting_consent')).toBe('#queue?step=s-1');
    expect(stepHref('s-1', undefined)).toBe('#queue?step=s-1');
    expect(stepHref('s-1', 'executed')).toBe('#history?q=s-1');
    expect(queueStepFromHash('#queue?step=s-1')).toBe('s-1');
    expect(queueStepFromHash('#history?q=s-1')).toBeNull();
    expect(queueStepFromHash(`#queue?step=${'x'.repeat(300)}`)).toBeNull();
    expect(runFromHash('#runs?run=run-7')).toBe('run-7');
    expect(runFromHash('#runs')).toBeNull();
  });

  it('tool groups become the tools they offer', () => {
    expect(toolsOfGroups(['files', 'ask'])).toEqual(['read_file', 'list_dir', 'search_files', 'write_file', 'delete_file', 'ask_user']);
    expect(new Set(toolsOfGroups(RUN_TOOL_GROUP_NAMES))).toEqual(new Set(RUN_TOOLS));
  });
});
