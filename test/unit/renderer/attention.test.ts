import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StepRecord } from '../../../src/domain/step-record.js';
import {
  askForNotifications,
  faviconFor,
  NOTIFY_CHOICE_KEY,
  notifyState,
  raiseNotice,
  setNotificationsWanted,
  WaitingNotifier,
  waitingNotice,
} from '../../../renderer/attention.js';

function record(
  id: string,
  client: string,
  origin: 'agent' | 'user' = 'agent',
  status: StepRecord['status'] = 'awaiting_consent',
): StepRecord {
  return {
    step: {
      id,
      planId: 'p',
      action: 'writeFile',
      args: { path: `/ws/${id}.txt`, content: 'x' },
      meta: { origin, client, purpose: 'notes' },
    },
    status,
    evaluation: { risk: 'MEDIUM' },
  } as unknown as StepRecord;
}

class MemoryStorage {
  private readonly values = new Map<string, string>();
  getItem(key: string) {
    return this.values.get(key) ?? null;
  }
  setItem(key: string, value: string) {
    this.values.set(key, value);
  }
}

/** The browser's Notification API as a page sees it: a permission, a prompt answer, and what was shown. */
function fakeNotificationApi(permission: NotificationPermission, answer: NotificationPermission) {
  const shown: { title: string; body?: string }[] = [];
  const api = class {
    static permission = permission;
    static prompts = 0;
    static async requestPermission() {
      api.prompts += 1;
      api.permission = answer;
      return answer;
    }
    onclick: (() => void) | null = null;
    constructor(title: string, options?: { body?: string }) {
      shown.push({ title, body: options?.body });
    }
    close() {}
  };
  return { api, shown };
}

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('getting the person’s attention', () => {
  it('coalesces a burst of 200 waiting steps from one agent into one notice that names the agent', () => {
    vi.useFakeTimers();
    const notices: string[] = [];
    const notifier = new WaitingNotifier(
      () => ['/ws'],
      (notice) => notices.push(`${notice.title} | ${notice.body}`),
    );
    // A plan's steps are prepared one after another: they arrive as a stream, up to a second apart on a busy machine.
    for (let index = 0; index < 200; index++) {
      notifier.offer(record(`s${index}`, 'agent X'));
      vi.advanceTimersByTime(index % 10 === 0 ? 1000 : 30);
    }
    expect(notices).toEqual([]);
    vi.advanceTimersByTime(2000);
    expect(notices).toEqual(['200 steps wait from agent agent X | Latest: Write s199.txt']);
  });

  it('waits while the same agent’s plan is still being prepared, however slowly, then says the whole plan once', () => {
    vi.useFakeTimers();
    const notices: string[] = [];
    const notifier = new WaitingNotifier(
      () => ['/ws'],
      (notice) => notices.push(notice.title),
    );
    // The plan's 40 steps appear at once, preparing; then they wait one by one, up to 5 s apart.
    for (let index = 0; index < 40; index++) notifier.offer(record(`p${index}`, 'bot', 'agent', 'proposed'));
    for (let index = 0; index < 40; index++) {
      notifier.offer(record(`p${index}`, 'bot'));
      vi.advanceTimersByTime(index % 8 === 0 ? 5000 : 50);
    }
    vi.advanceTimersByTime(2000);
    expect(notices).toEqual(['40 steps wait from agent bot']);
    // Another agent's slow preparation does not hold this agent's notice back.
    notifier.offer(record('other-slow', 'slowpoke', 'agent', 'evaluated'));
    notifier.offer(record('lone', 'bot'));
    vi.advanceTimersByTime(2000);
    expect(notices).toEqual(['40 steps wait from agent bot', 'MEDIUM step waits from agent bot']);
    // A plan that never finishes preparing still gets its notice, at the latest after a minute.
    notifier.offer(record('stuck-1', 'stuck', 'agent', 'proposed'));
    notifier.offer(record('stuck-0', 'stuck'));
    vi.advanceTimersByTime(30_000);
    expect(notices).toHaveLength(2);
    vi.advanceTimersByTime(30_000);
    expect(notices[2]).toBe('MEDIUM step waits from agent stuck');
  });

  it('a steady stream still gets a notice every few seconds, never one per step', () => {
    vi.useFakeTimers();
    const notices: number[] = [];
    const notifier = new WaitingNotifier(
      () => [],
      (_notice, records) => notices.push(records.length),
    );
    for (let index = 0; index < 600; index++) {
      notifier.offer(record(`s${index}`, 'a'));
      vi.advanceTimersByTime(250);
    }
    vi.advanceTimersByTime(3000);
    expect(notices.reduce((sum, count) => sum + count, 0)).toBe(600);
    expect(notices.length).toBeLessThanOrEqual(3);
  });

  it('names the step and agent for one step; counts per agent for a mixed burst', () => {
    expect(waitingNotice([record('a', 'claude')], ['/ws'])).toEqual({
      title: 'MEDIUM step waits from agent claude',
      body: 'Write a.txt — notes',
    });
    expect(waitingNotice([record('a', 'claude'), record('b', 'claude'), record('c', 'cursor')], ['/ws'])?.title).toBe(
      '3 steps wait: 2 from agent claude, 1 from agent cursor',
    );
    expect(waitingNotice([], [])).toBeNull();
  });

  it('does not notify for the person’s own steps, steps that do not wait (auto-approved), known ones or repeats', () => {
    vi.useFakeTimers();
    const notices: number[] = [];
    const notifier = new WaitingNotifier(
      () => [],
      (_notice, records) => notices.push(records.length),
    );
    notifier.know([record('old', 'a')]);
    notifier.offer(record('old', 'a'));
    notifier.offer(record('mine', 'cli', 'user'));
    notifier.offer(record('auto', 'a', 'agent', 'approved'));
    notifier.offer(record('ran', 'a', 'agent', 'executed'));
    vi.advanceTimersByTime(1000);
    expect(notices).toEqual([]);
    notifier.offer(record('new', 'a'));
    notifier.offer(record('new', 'a'));
    vi.advanceTimersByTime(2000);
    notifier.offer(record('new', 'a'));
    vi.advanceTimersByTime(2000);
    expect(notices).toEqual([1]);
  });

  it('asks for the permission once; after a denial it never asks again and says it is blocked', async () => {
    const storage = new MemoryStorage();
    vi.stubGlobal('localStorage', storage);
    const { api } = fakeNotificationApi('default', 'denied');
    vi.stubGlobal('Notification', api);
    expect(notifyState()).toBe('ask');
    expect(await askForNotifications()).toBe('blocked');
    expect(storage.getItem(NOTIFY_CHOICE_KEY)).toBe('denied');
    // The browser forgets (a profile reset): the window remembers, and does not ask again.
    api.permission = 'default';
    expect(notifyState()).toBe('blocked');
    expect(await askForNotifications()).toBe('blocked');
    expect(api.prompts).toBe(1);
  });

  it('shows a browser notification only when allowed and wanted', async () => {
    vi.stubGlobal('localStorage', new MemoryStorage());
    const { api, shown } = fakeNotificationApi('default', 'granted');
    vi.stubGlobal('Notification', api);
    expect(raiseNotice({ title: 't', body: 'b' })).toBe(false);
    expect(await askForNotifications()).toBe('on');
    expect(raiseNotice({ title: '2 steps wait from agent a', body: 'Latest: Write x' })).toBe(true);
    expect(shown).toEqual([{ title: 'Executor: 2 steps wait from agent a', body: 'Latest: Write x' }]);
    expect(setNotificationsWanted(false)).toBe('off');
    expect(raiseNotice({ title: 't', body: 'b' })).toBe(false);
    expect(shown).toHaveLength(1);
  });

  it('draws the waiting count on the favicon, and a plain icon when nothing waits', () => {
    const decoded = (count: number) => decodeURIComponent(faviconFor(count).replace(/^data:image\/svg\+xml,/, ''));
    expect(faviconFor(0)).toMatch(/^data:image\/svg\+xml,/);
    expect(decoded(0)).not.toContain('<text');
    expect(decoded(3)).toContain('>3</text>');
    expect(decoded(42)).toContain('>42</text>');
    expect(decoded(1500)).toContain('>99+</text>');
    expect(new Set([0, 1, 2, 100].map(faviconFor)).size).toBe(4);
  });
});
