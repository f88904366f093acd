/*
 * How long until a question expires, in words a person reads at a glance: "29 minutes and 5 seconds
 * left", "45 seconds left", and once it is past, that it has expired. The window ticks it each second.
 */

function unit(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/** The time left until `expiresAt` (ISO), said in words; `now` is Date.now() of the tick. */
export function timeLeftText(expiresAt: string, now: number): string {
  const ms = Date.parse(expiresAt) - now;
  if (!Number.isFinite(ms)) return 'no time limit known';
  if (ms <= 0) return 'time is up: the question has expired';
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return `${unit(seconds, 'second')} left`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    const rest = seconds % 60;
    return `${unit(minutes, 'minute')}${rest ? ` and ${unit(rest, 'second')}` : ''} left`;
  }
  const hours = Math.floor(minutes / 60);
  const restMinutes = minutes % 60;
  if (hours < 48) return `${unit(hours, 'hour')}${restMinutes ? ` and ${unit(restMinutes, 'minute')}` : ''} left`;
  return `${unit(Math.floor(hours / 24), 'day')} left`;
}

/** Whether a countdown is in its last minute: the window says so more loudly (in words, not only colour). */
export function almostExpired(expiresAt: string, now: number): boolean {
  const ms = Date.parse(expiresAt) - now;
  return Number.isFinite(ms) && ms > 0 && ms <= 60_000;
}
