import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // Real processes, real SQLite files, real engines: give them room on a 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // expect.poll follows events (a selector showing, a status arriving); its default of 1 s was
    // written for a quiet laptop, and under two busy cores a window can take longer to draw.
    expect: { poll: { timeout: 15_000 } },
  },
});
