import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { closeAfter, defer, killAfter, suiteTeardown, TeardownStack } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the teardown stack', () => {
  it('undoes in the order opposite to registration, awaiting each async cleanup before the next', async () => {
    const stack = new TeardownStack();
    const events: string[] = [];
    for (const name of ['first', 'second', 'third']) {
      stack.push(async () => {
        events.push(`${name} starts`);
        await sleep(20);
        events.push(`${name} ends`);
      });
    }
    await stack.run();
    expect(events).toEqual(['third starts', 'third ends', 'second starts', 'second ends', 'first starts', 'first ends']);
  });

  it('runs every cleanup when some throw, then rethrows the first error', async () => {
    const stack = new TeardownStack();
    const ran: string[] = [];
    stack.push(() => void ran.push('oldest'));
    stack.push(() => {
      ran.push('throws second');
      throw new Error('the second failure');
    });
    stack.push(async () => {
      ran.push('rejects first');
      await sleep(5);
      throw new Error('the first failure');
    });
    stack.push(() => void ran.push('newest'));
    await expect(stack.run()).rejects.toThrow('the first failure');
    expect(ran).toEqual(['newest', 'rejects first', 'throws second', 'oldest']);
    // Nothing is left to run twice.
    await stack.run();
    expect(ran).toHaveLength(4);
  });

  it('runs a cleanup that another cleanup registers', async () => {
    const stack = new TeardownStack();
    const ran: string[] = [];
    stack.push(() => void ran.push('older'));
    stack.push(() => stack.push(() => void ran.push('registered while undoing')));
    await stack.run();
    expect(ran).toEqual(['registered while undoing', 'older']);
  });
});

/*
 * The shared stack, seen from the outside: one test opens things, the next checks what the afterEach
 * did with them. The tests of a file run one after another, in order.
 */
describe('after each test', () => {
  const seen: string[] = [];
  let base = '';
  let loose = '';
  let child: ChildProcess | undefined;

  it('opens a host in a temp directory, a client of it, a child process and a directory made after them', async () => {
    const setup = tempSetup();
    base = setup.base;
    // A host writes its final checkpoint on close: the directory must still be there.
    closeAfter({
      close: async () => {
        await sleep(20);
        seen.push(`host closed, data directory there: ${fs.existsSync(setup.dataDir)}`);
      },
    });
    closeAfter({ close: () => void seen.push(`client closed, data directory there: ${fs.existsSync(setup.dataDir)}`) });
    child = killAfter(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
    defer(() => void seen.push(`child still running: ${child!.exitCode === null && child!.signalCode === null}`));
    loose = tempDir();
    fs.writeFileSync(path.join(loose, 'file.txt'), 'x');
    expect(fs.existsSync(base)).toBe(true);
  });

  it('closed them newest first, killed and waited for the child, and removed each directory after what was opened in it', () => {
    expect(seen).toEqual([
      'child still running: true',
      'client closed, data directory there: true',
      'host closed, data directory there: true',
    ]);
    expect(child!.signalCode).toBe('SIGKILL');
    expect(fs.existsSync(base)).toBe(false);
    expect(fs.existsSync(loose)).toBe(false);
  });
});

describe('a close that throws', () => {
  const closed: string[] = [];

  // The afterEach rethrows the error, which fails the test that opened the thing.
  it.fails('fails the test that opened it', () => {
    closeAfter({ close: () => void closed.push('older') });
    closeAfter({
      close: () => {
        throw new Error('close failed');
      },
    });
    closeAfter({ close: () => void closed.push('newer') });
  });

  it('leaves nothing else open', () => {
    expect(closed).toEqual(['newer', 'older']);
  });
});

// Filled by the block below and read by the one after it, which runs once the first one's afterAll has.
const suiteClosed: string[] = [];
let suiteShared = '';
let plainOpened = '';

describe('a suite teardown', () => {
  const suite = suiteTeardown();

  beforeAll(() => {
    suiteShared = tempDir('executor-suite-', suite);
    suite.closeAfter({ close: () => void suiteClosed.push(`host closed, its directory there: ${fs.existsSync(suiteShared)}`) });
    // Opened in a beforeAll without a suite teardown: kept until the file is done, not removed after the first test.
    plainOpened = tempDir();
  });

  it('keeps what its beforeAll opened for the first test', () => {
    expect(fs.existsSync(suiteShared)).toBe(true);
    expect(fs.existsSync(plainOpened)).toBe(true);
  });

  it('and for the next', () => {
    expect(fs.existsSync(suiteShared)).toBe(true);
    expect(fs.existsSync(plainOpened)).toBe(true);
    expect(suiteClosed).toEqual([]);
  });

  describe('in a nested block', () => {
    it('keeps it too', () => {
      expect(fs.existsSync(suiteShared)).toBe(true);
      expect(suiteClosed).toEqual([]);
    });
  });
});

describe('after a suite teardown block', () => {
  it('closed its host before removing its directory, and left what a plain beforeAll opened to the end of the file', () => {
    expect(suiteClosed).toEqual(['host closed, its directory there: true']);
    expect(fs.existsSync(suiteShared)).toBe(false);
    expect(fs.existsSync(plainOpened)).toBe(true);
  });
});
