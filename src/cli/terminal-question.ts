import { createInterface } from 'node:readline/promises';

/** One y/N question on the terminal; anything but y or yes is no. */
export async function askYes(question: string): Promise<boolean> {
  // Ctrl-D (the terminal closed the input), even typed before the question, is a no, never a wait that does not end.
  if (process.stdin.readableEnded) return false;
  const readline = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await new Promise<boolean>((resolve) => {
      readline.once('close', () => resolve(false));
      process.stdin.once('end', () => resolve(false));
      readline.question(question).then(
        (answer) => resolve(/^\s*y(es)?\s*$/i.test(answer)),
        () => resolve(false),
      );
    });
  } finally {
    readline.close();
  }
}
