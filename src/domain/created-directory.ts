/**
 * The folders a step's writes created, and what a revert does with them. Plain data: the backup
 * layer makes and removes the folders (src/fs/created-directories.ts), the store keeps the
 * records, and every surface shows the outcome.
 */

/**
 * A directory a step made, identified as it was right after mkdir. Revert removes it only while the
 * same path still holds this very directory: a directory someone put there since, a link swapped in,
 * or one that now holds other work is kept, and the person is told why.
 */
export interface CreatedDirectory {
  /** Real path (no link on the way), as the write that made it resolved it. */
  path: string;
  /** Device and inode numbers as decimal text: 64-bit values that a JavaScript number cannot always hold. */
  dev: string;
  ino: string;
  /** Birth time in nanoseconds where the file system keeps one: it tells a reused inode number apart. */
  birthtimeNs: string | null;
}

/** What revert would do with one directory the step created (previewRevert). */
export interface DirectoryRevertPlanEntry {
  path: string;
  /** remove: it is still the step's and will be empty; keep: see reason; gone: it is not there any more. */
  state: 'remove' | 'keep' | 'gone';
  /** In words, to follow "kept <path>: ": "it holds todo.md, which the step did not create". */
  reason: string;
}

/** What revert did with one directory the step created. */
export interface DirectoryRevertOutcome {
  path: string;
  state: 'removed' | 'kept' | 'gone';
  reason: string;
}
