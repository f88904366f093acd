import type { StepRecord } from '../src/domain/step-record.js';
import { desktopNotify } from './desktop-notify.js';
import { summarizeStep } from './step-text.js';

/**
 * Getting the person's attention when a step starts to wait for them: a notification (the desktop
 * app's native one, or the browser's Notification API once the person allowed it), a count on
 * the favicon, and a chime if they turned it on. Bursts are coalesced: an agent proposing 200
 * steps raises one notification, "200 steps wait from agent X", not 200.
 */

/** Where the person's choices live across reloads (this browser profile only). */
export const NOTIFY_CHOICE_KEY = 'executor.notifications';
export const SOUND_CHOICE_KEY = 'executor.sound';

function storage(): Storage | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null;
  }
}

/**
 * What the browser tab may do about notifications, as the "Notify me" control shows it:
 * `desktop` (the app notifies natively, nothing to ask), `unsupported`, `ask` (never asked:
 * offer the button), `on`, `off` (the person turned them off here), `blocked` (denied: never re-asked).
 */
export type NotifyState = 'desktop' | 'unsupported' | 'ask' | 'on' | 'off' | 'blocked';

export function notifyState(): NotifyState {
  if (hasDesktopShell()) return 'desktop';
  const api = (globalThis as { Notification?: typeof Notification }).Notification;
  if (!api) return 'unsupported';
  const saved = storage()?.getItem(NOTIFY_CHOICE_KEY);
  // A denial is final, whether the browser remembers it or only we do (a profile reset, a prompt the browser suppressed).
  if (api.permission === 'denied' || saved === 'denied') return 'blocked';
  if (api.permission === 'granted') return saved === 'off' ? 'off' : 'on';
  return 'ask';
}

/** Asks once, from the person's click (browsers ignore a request without a gesture); remembers the answer. */
export async function askForNotifications(): Promise<NotifyState> {
  const api = (globalThis as { Notification?: typeof Notification }).Notification;
  if (!api || notifyState() !== 'ask') return notifyState();
  const answer = await api.requestPermission();
  if (answer === 'denied') storage()?.setItem(NOTIFY_CHOICE_KEY, 'denied');
  else if (answer === 'granted') storage()?.setItem(NOTIFY_CHOICE_KEY, 'on');
  return notifyState();
}

/** Turns browser notifications off or back on without touching the browser's permission. */
export function setNotificationsWanted(wanted: boolean): NotifyState {
  const state = notifyState();
  if (state === 'on' || state === 'off') storage()?.setItem(NOTIFY_CHOICE_KEY, wanted ? 'on' : 'off');
  return notifyState();
}

/** The chime is off until the person turns it on. */
export function soundWanted(): boolean {
  return storage()?.getItem(SOUND_CHOICE_KEY) === 'on';
}

export function setSoundWanted(wanted: boolean): void {
  storage()?.setItem(SOUND_CHOICE_KEY, wanted ? 'on' : 'off');
}

function hasDesktopShell(): boolean {
  const shell = (globalThis as { executorShell?: { notify?: unknown } }).executorShell;
  return typeof shell?.notify === 'function';
}

/** A short two-tone chime from Web Audio: no sound file to load, nothing the page's CSP must allow. */
export function playChime(): void {
  const Context = (globalThis as { AudioContext?: typeof AudioContext }).AudioContext;
  if (!Context) return;
  try {
    const context = new Context();
    const gain = context.createGain();
    gain.gain.setValueAtTime(0.08, context.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.0001, context.currentTime + 0.5);
    gain.connect(context.destination);
    [880, 1320].forEach((frequency, index) => {
      const tone = context.createOscillator();
      tone.frequency.value = frequency;
      tone.connect(gain);
      tone.start(context.currentTime + index * 0.12);
      tone.stop(context.currentTime + 0.5);
    });
    setTimeout(() => void context.close().catch(() => undefined), 800);
  } catch {
    // A browser that refuses audio without a gesture just stays quiet: the notification and badge still say it.
  }
}

/**
 * The favicon with the waiting count on it, as an SVG data URL (no canvas, no file): a hexagon like
 * the sidebar's mark, and a red disc with the count once something waits ("99+" past 99).
 */
export function faviconFor(waiting: number): string {
  const hexagon = '<path d="M16 2 29 9.5v15L16 32 3 24.5v-15Z" fill="#4a7dff"/>';
  const label = waiting > 99 ? '99+' : String(waiting);
  const badge =
    waiting > 0
      ? `<circle cx="21" cy="11" r="11" fill="#d93025"/><text x="21" y="15.5" font-family="Arial,sans-serif" font-size="${label.length > 2 ? 9 : label.length > 1 ? 12 : 14}" font-weight="700" text-anchor="middle" fill="#fff">${label}</text>`
      : '';
  return `data:image/svg+xml,${encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 34 34">${hexagon}${badge}</svg>`)}`;
}

/** Puts the count on the tab's icon: the page's own <link rel="icon">, made if missing. */
export function showFaviconCount(waiting: number): void {
  let link = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
  if (!link) {
    link = document.createElement('link');
    link.rel = 'icon';
    document.head.append(link);
  }
  const href = faviconFor(waiting);
  if (link.getAttribute('href') !== href) link.setAttribute('href', href);
  link.dataset.waiting = String(waiting);
}

/** Who proposed a step, as a notification names them. */
export function proposerName(record: StepRecord): string {
  const meta = record.step.meta;
  if (meta.origin === 'agent') return `agent ${meta.client ?? meta.agent ?? 'unnamed'}`;
  return meta.client ? `${meta.client}` : 'the command line';
}

export interface WaitingNotice {
  title: string;
  body: string;
}

/**
 * One notice for a burst of newly waiting steps: the step by name when it is one, the count per
 * proposer otherwise ("200 steps wait from agent X"; "3 steps wait: 2 from agent X, 1 from agent Y").
 */
export function waitingNotice(records: readonly StepRecord[], roots: readonly string[]): WaitingNotice | null {
  if (records.length === 0) return null;
  if (records.length === 1) {
    const record = records[0]!;
    const purpose = record.step.meta.purpose ? ` — ${record.step.meta.purpose}` : '';
    return {
      title: `${record.evaluation?.risk ? `${record.evaluation.risk} step` : 'A step'} waits from ${proposerName(record)}`,
      body: `${summarizeStep(record.step, roots)}${purpose}`,
    };
  }
  const byProposer = new Map<string, StepRecord[]>();
  for (const record of records) byProposer.set(proposerName(record), [...(byProposer.get(proposerName(record)) ?? []), record]);
  const newest = records[records.length - 1]!;
  const latest = `Latest: ${summarizeStep(newest.step, roots)}`;
  if (byProposer.size === 1) return { title: `${records.length} steps wait from ${[...byProposer.keys()][0]}`, body: latest };
  const parts = [...byProposer.entries()].map(([who, steps]) => `${steps.length} from ${who}`);
  return { title: `${records.length} steps wait: ${parts.join(', ')}`, body: latest };
}

/**
 * Whether a step event should raise the person's attention: it waits for them now, an agent (not
 * the person at the CLI) proposed it, and it was not noticed before. A step a rule or the policy
 * approved never waits, so it never gets here.
 */
export function wantsAttention(record: StepRecord): boolean {
  return record.status === 'awaiting_consent' && record.step.meta.origin !== 'user';
}

/** A burst ends after this long without a new waiting step... */
export const QUIET_MS = 1_500;
/**
 * ...once no step of the same agents is still being prepared (a plan's steps all appear at once as
 * "preparing" and then wait one by one, seconds apart on a busy machine), or at the latest this
 * long after it began, so a plan that takes minutes to prepare still gets a notice.
 */
export const BURST_MAX_MS = 60_000;

/**
 * Collects newly waiting steps and raises one notice per burst. `notify` receives the notice (the
 * window decides where it goes); the notifier only decides when and with what words. It is fed
 * every step event: those of steps still preparing tell it more of the same burst is coming.
 */
export class WaitingNotifier {
  private readonly seen = new Set<string>();
  /** Steps of agents that are still being prepared, with who proposed them. */
  private readonly preparing = new Map<string, string>();
  private burst: StepRecord[] = [];
  private quietTimer: ReturnType<typeof setTimeout> | undefined;
  private maxTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly roots: () => readonly string[],
    private readonly notify: (notice: WaitingNotice, records: readonly StepRecord[]) => void,
    private readonly quietMs = QUIET_MS,
    private readonly maxMs = BURST_MAX_MS,
  ) {}

  /** Steps already waiting when the window opened are known, not news (the queue's summaries or records). */
  know(steps: readonly ({ id: string; status: StepRecord['status'] } | StepRecord)[]): void {
    for (const step of steps) if (step.status === 'awaiting_consent') this.seen.add('step' in step ? step.step.id : step.id);
  }

  offer(record: StepRecord): void {
    const id = record.step.id;
    if ((record.status === 'proposed' || record.status === 'evaluated') && record.step.meta.origin !== 'user')
      this.preparing.set(id, proposerName(record));
    else this.preparing.delete(id);
    if (!wantsAttention(record) || this.seen.has(id)) {
      // The last step of a plan may settle without waiting (denied, withdrawn): the burst may be complete now.
      if (this.burst.length > 0) this.armQuiet();
      return;
    }
    this.seen.add(id);
    this.burst.push(record);
    this.armQuiet();
    this.maxTimer ??= setTimeout(() => this.flush(), this.maxMs);
  }

  flush(): void {
    this.stopTimers();
    const records = this.burst;
    this.burst = [];
    const notice = waitingNotice(records, this.roots());
    if (notice) this.notify(notice, records);
  }

  dispose(): void {
    this.stopTimers();
    this.burst = [];
    this.preparing.clear();
  }

  private armQuiet(): void {
    clearTimeout(this.quietTimer);
    this.quietTimer = setTimeout(() => this.flushWhenPrepared(), this.quietMs);
  }

  /** Flushes unless an agent of this burst still has steps in preparation: they would be the same burst. */
  private flushWhenPrepared(): void {
    this.quietTimer = undefined;
    const proposers = new Set(this.burst.map(proposerName));
    if ([...this.preparing.values()].some((proposer) => proposers.has(proposer))) return;
    this.flush();
  }

  private stopTimers(): void {
    clearTimeout(this.quietTimer);
    clearTimeout(this.maxTimer);
    this.quietTimer = undefined;
    this.maxTimer = undefined;
  }
}

/** Whether the person is looking at this window: then the queue itself is the notice. */
export function windowInView(): boolean {
  return document.visibilityState === 'visible' && document.hasFocus();
}

/**
 * Raises a notice where this window can: natively in the desktop app, through the Notification API
 * in a browser tab the person allowed. Returns whether one was shown. `tag` makes a newer burst
 * replace an older unread one instead of piling up.
 */
export function raiseNotice(notice: WaitingNotice): boolean {
  if (desktopNotify(`Executor: ${notice.title}`, notice.body)) return true;
  if (notifyState() !== 'on') return false;
  try {
    const shown = new Notification(`Executor: ${notice.title}`, { body: notice.body, tag: 'executor-waiting' });
    shown.onclick = () => {
      window.focus();
      shown.close();
    };
    return true;
  } catch {
    return false;
  }
}
