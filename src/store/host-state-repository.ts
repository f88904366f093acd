import type { HostPause } from '../domain/host-pause.js';
import type { Db } from './database.js';

/**
 * The host's own state beside the policy (host_state): today the stop switch. Written inside the
 * caller's transaction, with the audit record that says who changed it, so the two never disagree.
 */
export class HostStateRepository {
  constructor(private readonly db: Db) {}

  pause(): HostPause | null {
    const row = this.db.prepare("SELECT value_json FROM host_state WHERE name = 'paused'").get() as { value_json: string } | undefined;
    return row ? (JSON.parse(row.value_json) as HostPause) : null;
  }

  setPause(pause: HostPause | null): void {
    if (pause === null) {
      this.db.prepare("DELETE FROM host_state WHERE name = 'paused'").run();
      return;
    }
    this.db
      .prepare(
        `INSERT INTO host_state (name, value_json, updated_at) VALUES ('paused', ?, ?)
         ON CONFLICT(name) DO UPDATE SET value_json = excluded.value_json, updated_at = excluded.updated_at`,
      )
      .run(JSON.stringify(pause), pause.pausedAt);
  }
}
