/**
 * The time the log gives a record, on a machine whose clock may step: NTP correcting a clock that
 * was minutes fast, a resumed VM, a laptop whose battery ran out. A record is never dated before
 * the time the log already stands at (its newest record, its current epoch's start), so every
 * record stays inside the window its epoch's certificate declared, whatever the clock did; a clock
 * found behind that time by more than CLOCK_STEP_MS is a fact of its own (`clock.stepped`), so the
 * dates that follow are not mistaken for what the clock said.
 */

/** A clock behind the log's time by more than this is a step worth recording (NTP's slews are milliseconds). */
export const CLOCK_STEP_MS = 1000;

export interface RecordTime {
  /** The date to write: the clock's reading, or the log's time when the clock is behind it. */
  at: Date;
  /** What the clock said. */
  clock: Date;
  /** Set when the clock stepped back behind the log's time since this process last read it: how far behind (ms). */
  steppedBackMs?: number;
}

export class RecordClock {
  /** The clock's reading at the previous dating in this process: a step is recorded once, not at every record that follows it. */
  private lastClock: number | undefined;

  constructor(private readonly clock: () => Date) {}

  /** Dates the next record or checkpoint; `floorMs` is the time the log already stands at. */
  date(floorMs: number): RecordTime {
    const clock = this.clock();
    const reading = clock.getTime();
    const behind = Number.isFinite(floorMs) ? floorMs - reading : 0;
    const newStep = behind > CLOCK_STEP_MS && (this.lastClock === undefined || reading < this.lastClock - CLOCK_STEP_MS);
    this.lastClock = reading;
    return {
      at: behind > 0 ? new Date(floorMs) : clock,
      clock,
      ...(newStep ? { steppedBackMs: behind } : {}),
    };
  }

  /** The date for a checkpoint or a rotation: like date(), without taking the reading as seen (the next record still tells a step). */
  peek(floorMs: number): Date {
    const clock = this.clock();
    return Number.isFinite(floorMs) && floorMs > clock.getTime() ? new Date(floorMs) : clock;
  }
}
