/**
 * A content-addressed file whose bytes no longer hash to its name (damaged, cut short, replaced): told apart
 * from a missing or unreadable one, so a step whose content it held can say its content is damaged, not gone.
 */
export class BlobMismatchError extends Error {
  constructor(readonly hash: string) {
    super(`backup blob ${hash} is corrupt: its content no longer matches its name`);
    this.name = 'BlobMismatchError';
  }
}
