import { describe, expect, it } from 'vitest';
import { RequestGate } from '../../../src/executor/request-gate.js';

/** A clock the test moves by hand; patience and deferral are long, so no real timer decides anything here. */
function gateWithClock(options: { patienceMs?: number; maxDeferMs?: number } = {}) {
  let now = 1_000_000;
  const gate = new RequestGate({ patienceMs: options.patienceMs ?? 60_000, maxDeferMs: options.maxDeferMs ?? 60_000, now: () => now });
  return { gate, advance: (ms: number) => (now += ms) };
}

/** Lets `count` turns of the event loop pass (each turn runs every check the gate scheduled). */
async function turns(count: number): Promise<void> {
  for (let index = 0; index < count; index++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Whether the promise has settled, without waiting for it. */
function settledFlag(promise: Promise<unknown>): { readonly done: boolean } {
  const state = { done: false };
  void promise.then(() => (state.done = true));
  return state;
}

describe('RequestGate: requests go before background work', () => {
  it('lets background work go on an idle host, but not in the current turn of the event loop', async () => {
    const { gate } = gateWithClock();
    const clear = settledFlag(gate.whenClear());
    await Promise.resolve();
    expect(clear.done).toBe(false);
    await turns(1);
    expect(clear.done).toBe(true);
  });

  it('holds background work while a request is under way and lets it go once the request is answered', async () => {
    const { gate } = gateWithClock();
    const answered = gate.begin();
    const clear = settledFlag(gate.whenClear());
    await turns(50);
    expect(clear.done).toBe(false);
    expect(gate.requestsUnderWay).toBe(1);
    answered();
    await turns(2);
    expect(clear.done).toBe(true);
    expect(gate.requestsUnderWay).toBe(0);
  });

  it('waits for every request under way, and an answer given twice counts once', async () => {
    const { gate } = gateWithClock();
    const first = gate.begin();
    const second = gate.begin();
    const clear = settledFlag(gate.whenClear());
    first();
    first();
    await turns(10);
    expect(clear.done).toBe(false);
    expect(gate.requestsUnderWay).toBe(1);
    second();
    await turns(2);
    expect(clear.done).toBe(true);
  });

  it('lets one unit go per turn, so a request that arrives between two units goes before the second', async () => {
    const { gate } = gateWithClock();
    const order: string[] = [];
    const first = gate.whenClear().then(() => {
      order.push('unit 1');
      // A request arrives while unit 1 runs (its bytes are read in the next poll phase).
      const answered = gate.begin();
      order.push('request arrived');
      void turns(5).then(() => {
        order.push('request answered');
        answered();
      });
    });
    const second = gate.whenClear().then(() => order.push('unit 2'));
    await Promise.all([first, second]);
    expect(order).toEqual(['unit 1', 'request arrived', 'request answered', 'unit 2']);
  });

  it('does not let a request that waits on something else (a container run, past its patience) hold previews back', async () => {
    const { gate, advance } = gateWithClock({ patienceMs: 1_000 });
    gate.begin();
    advance(1_001);
    const clear = settledFlag(gate.whenClear());
    await turns(2);
    expect(clear.done).toBe(true);
  });

  it('never starves background work: under a flood without gaps, a unit that waited its deferral goes anyway', async () => {
    const { gate, advance } = gateWithClock({ maxDeferMs: 250 });
    const clear = settledFlag(gate.whenClear());
    // The flood: a fresh request always under way.
    let answered = gate.begin();
    for (let round = 0; round < 5; round++) {
      const next = gate.begin();
      answered();
      answered = next;
      await turns(2);
      expect(clear.done).toBe(false);
    }
    advance(250);
    const next = gate.begin();
    answered();
    await turns(2);
    expect(clear.done).toBe(true);
    next();
  });

  it('lets the work a request waits for (a plan its approve runs on) go past that request, never past another one', async () => {
    const { gate } = gateWithClock();
    const other = gate.begin();
    let stepsRun = 0;
    let otherHeldIt = false;
    const approve = gate.served(async () => {
      for (let step = 0; step < 3; step++) {
        await gate.whenClearOfOthers();
        stepsRun += 1;
      }
    });
    await turns(50);
    // Another request under way holds the plan back, though its own approve does not.
    otherHeldIt = stepsRun === 0;
    other();
    await approve;
    expect(otherHeldIt).toBe(true);
    expect(stepsRun).toBe(3);
    expect(gate.requestsUnderWay).toBe(0);
    // Work set off outside any request (a preview) is held by every request, as whenClear is.
    const next = gate.begin();
    const clear = settledFlag(gate.whenClearOfOthers());
    await turns(20);
    expect(clear.done).toBe(false);
    next();
    await turns(2);
    expect(clear.done).toBe(true);
  });
});
