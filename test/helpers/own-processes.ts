/**
 * The processes this test file started, and its own: the sandbox containers labelled with one of
 * their pids are this file's to account for. Other test files run Docker at the same time, so "no
 * labelled container is left" must mean "none of ours", or it fails on a neighbour's run under way.
 */
const ownPids = new Set<number>([process.pid]);

export function noteOwnProcess(pid: number | undefined): void {
  if (pid) ownPids.add(pid);
}

export function isOwnProcess(pid: number): boolean {
  return ownPids.has(pid);
}
