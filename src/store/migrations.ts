/**
 * Schema history. Each entry runs once, in order, inside a transaction; user_version records
 * how far a database has come. Never edit a shipped entry: add a new one.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE plans (
    plan_id     TEXT PRIMARY KEY,
    purpose     TEXT,
    origin      TEXT NOT NULL,
    created_at  TEXT NOT NULL
  );
  CREATE TABLE steps (
    step_id             TEXT PRIMARY KEY,
    plan_id             TEXT NOT NULL REFERENCES plans(plan_id),
    position            INTEGER NOT NULL,
    action              TEXT NOT NULL,
    step_json           TEXT NOT NULL,
    step_hash           TEXT NOT NULL,
    status              TEXT NOT NULL,
    evaluation_json     TEXT,
    preview_json        TEXT,
    preview_hash        TEXT,
    approved_step_hash  TEXT,
    approved_preview_hash TEXT,
    approved_by_json    TEXT,
    approved_at         TEXT,
    rejected_reason     TEXT,
    result_json         TEXT,
    error_json          TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    started_at          TEXT,
    finished_at         TEXT,
    reverted_at         TEXT,
    UNIQUE (plan_id, position)
  );
  CREATE INDEX steps_status ON steps(status);
  CREATE INDEX steps_plan ON steps(plan_id, position);

  CREATE TABLE file_backups (
    step_id         TEXT NOT NULL REFERENCES steps(step_id),
    idx             INTEGER NOT NULL,
    path            TEXT NOT NULL,
    pre_hash        TEXT,
    post_hash       TEXT,
    existed_before  INTEGER NOT NULL,
    mode            INTEGER,
    diff            TEXT,
    PRIMARY KEY (step_id, idx)
  );

  CREATE TABLE kb_entries (
    entry_id    TEXT PRIMARY KEY,
    step_id     TEXT NOT NULL,
    title       TEXT NOT NULL,
    content     TEXT NOT NULL,
    tags_json   TEXT NOT NULL,
    created_at  TEXT NOT NULL
  );

  -- The audit log: one signed, hash-chained record per row. body holds the exact canonical bytes
  -- that were signed; the other columns are copies of body fields, indexed for queries and checked
  -- against body by verify.
  CREATE TABLE audit_records (
    seq      INTEGER PRIMARY KEY,
    ts       TEXT NOT NULL,
    action   TEXT NOT NULL,
    plan_id  TEXT,
    step_id  TEXT,
    body     TEXT NOT NULL,
    mac      BLOB NOT NULL,
    hash     BLOB NOT NULL,
    cosign   BLOB
  );
  CREATE INDEX audit_records_step ON audit_records(step_id, seq) WHERE step_id IS NOT NULL;
  CREATE INDEX audit_records_plan ON audit_records(plan_id, seq) WHERE plan_id IS NOT NULL;
  CREATE INDEX audit_records_ts ON audit_records(ts);
  CREATE INDEX audit_records_action ON audit_records(action, seq);
  CREATE TRIGGER audit_records_no_update BEFORE UPDATE ON audit_records BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;
  CREATE TRIGGER audit_records_no_delete BEFORE DELETE ON audit_records BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;

  CREATE TABLE audit_checkpoints (
    cp_seq  INTEGER PRIMARY KEY,
    seq     INTEGER NOT NULL,
    body    TEXT NOT NULL,
    mac     BLOB NOT NULL,
    sig     BLOB NOT NULL,
    hash    BLOB NOT NULL
  );
  CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
  CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
  `,
  // The light sandbox's budget ledger: runs of the last hour, so the budget holds across CLI commands.
  `
  CREATE TABLE sandbox_usage (
    started_at_ms  INTEGER NOT NULL,
    charged_ms     INTEGER NOT NULL
  );
  CREATE INDEX sandbox_usage_started ON sandbox_usage(started_at_ms);
  `,
  // Who acted (the signed body's userId) for getAudit's user and channel filters. Indexed on the
  // body's own value, not on a copied column: the index cannot disagree with what was signed, and
  // the append-only rows need no UPDATE. audit-query.ts repeats these exact expressions.
  `
  CREATE INDEX audit_records_channel ON audit_records(json_extract(body, '$.userId.channel'), seq);
  CREATE INDEX audit_records_user ON audit_records(json_extract(body, '$.userId.user'), seq);
  `,
  // How often each remembered rule approved a step. Here, not in policy.json: a hit is counted in
  // the same transaction as the approval and its rule.applied record, and counting never rewrites
  // the file the person edits.
  `
  CREATE TABLE rule_hits (
    rule_id      TEXT PRIMARY KEY,
    hits         INTEGER NOT NULL,
    last_hit_at  TEXT NOT NULL,
    last_step_id TEXT NOT NULL
  );
  `,
  // The folders a step's writes created (so revert can remove them again), in the order they were made (seq), each with the
  // identity it had then, so revert removes only that very folder; and what the revert did with them.
  `
  CREATE TABLE created_directories (
    seq           INTEGER PRIMARY KEY,
    step_id       TEXT NOT NULL REFERENCES steps(step_id),
    path          TEXT NOT NULL,
    dev           TEXT NOT NULL,
    ino           TEXT NOT NULL,
    birthtime_ns  TEXT
  );
  CREATE INDEX created_directories_step ON created_directories(step_id, seq);
  ALTER TABLE steps ADD COLUMN revert_json TEXT;
  `,
  // A plan's own consent expiry (seconds), when its proposer asked for one shorter than the policy's.
  `
  ALTER TABLE plans ADD COLUMN consent_expiry_seconds INTEGER;
  `,
  // When a step's dry run and real run started and ended (what History and `steps show` say it took): the real durations, also for a
  // command whose real run happens in the sandbox before the step is marked running.
  `
  ALTER TABLE steps ADD COLUMN run_times_json TEXT;
  `,
  // The person's change to a step before approving it (per-hunk approval, an edit), and the proposal it superseded.
  `
  ALTER TABLE steps ADD COLUMN edit_json TEXT;
  ALTER TABLE steps ADD COLUMN proposed_step_json TEXT;
  `,
  // The window's paged lists (listStepSummaries): newest first by a key that never changes, and the
  // agent filter on the step's own label (the expression step-repository.ts repeats), so a page of
  // History costs an index walk, not a parse of every stored step.
  `
  CREATE INDEX steps_created ON steps(created_at DESC, plan_id, position);
  CREATE INDEX steps_client ON steps(json_extract(step_json, '$.meta.client'), created_at);
  `,
  // Forward-secure checkpoint signatures (a stolen later key cannot re-sign the past): each epoch's certificate of the next epoch's
  // Ed25519 key and window, and each checkpoint's signature under its epoch's own key.
  `
  CREATE TABLE audit_epoch_certs (
    key_id  TEXT NOT NULL,
    epoch   INTEGER NOT NULL,
    body    TEXT NOT NULL,
    sig     BLOB NOT NULL,
    PRIMARY KEY (key_id, epoch)
  ) WITHOUT ROWID;
  CREATE TRIGGER audit_epoch_certs_no_update BEFORE UPDATE ON audit_epoch_certs BEGIN SELECT RAISE(ABORT, 'audit certificates are append-only'); END;
  CREATE TRIGGER audit_epoch_certs_no_delete BEFORE DELETE ON audit_epoch_certs BEGIN SELECT RAISE(ABORT, 'audit certificates are append-only'); END;
  ALTER TABLE audit_checkpoints ADD COLUMN epoch_sig BLOB;
  `,
  // The audit log as an RFC 9162 Merkle tree (src/audit/log/audit-tree.ts; witnesses and proofs need it): every complete
  // subtree by its position in the order appends complete them (merkle.ts nodePosition), written
  // with its record, so rows only ever go at the end; and each
  // checkpoint's C2SP tlog-checkpoint note, signed by the log key, for witnesses and proofs.
  // Both are derived from records and checkpoints (no append-only triggers): opening the log trims
  // what outlived a cut and hashes in what is missing; the signed checkpoints are the evidence.
  `
  CREATE TABLE audit_tree (
    pos   INTEGER PRIMARY KEY,
    hash  BLOB NOT NULL
  );
  CREATE TABLE audit_checkpoint_notes (
    cp_seq  INTEGER PRIMARY KEY,
    size    INTEGER NOT NULL,
    note    TEXT NOT NULL
  );
  `,
  // What witnesses outside the machine hold of the audit log (to tell a rolled back copy): each cosignature a tlog-witness
  // returned (checked against its vkey before it is stored), and each checkpoint pushed to a team's git
  // remote (signature NULL: the remote's protected branch is the witness). Per witness, the newest row is
  // the size to send as "old" next time.
  `
  CREATE TABLE audit_cosignatures (
    witness      TEXT NOT NULL,
    size         INTEGER NOT NULL,
    root_hash    BLOB NOT NULL,
    signature    TEXT,
    cosigned_at  INTEGER NOT NULL,
    note         TEXT NOT NULL,
    PRIMARY KEY (witness, size)
  );
  `,
  // Agent runs (src/runs/, resumable after a restart): a run's state and limits, its conversation as the model saw it
  // (provider-neutral ModelMessage JSON, one row a message, appended), each iteration's trace, and each
  // tool call with the step it became, so a restart resumes from the first call without an outcome and
  // never proposes a step twice. Questions are a run's ask_user and an MCP agent's askUser alike.
  `
  CREATE TABLE runs (
    run_id           TEXT PRIMARY KEY,
    task             TEXT NOT NULL,
    status           TEXT NOT NULL,
    provider         TEXT NOT NULL,
    model            TEXT NOT NULL,
    base_url         TEXT,
    root             TEXT NOT NULL,
    tools_json       TEXT NOT NULL,
    started_by_json  TEXT NOT NULL,
    iterations       INTEGER NOT NULL DEFAULT 0,
    tool_calls       INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    max_iterations   INTEGER NOT NULL,
    max_tokens       INTEGER NOT NULL,
    max_tool_calls   INTEGER NOT NULL,
    max_wall_ms      INTEGER NOT NULL,
    waiting_step_id  TEXT,
    question_id      TEXT,
    end_code         TEXT,
    end_message      TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    ended_at         TEXT
  );
  CREATE INDEX runs_created ON runs(created_at DESC, run_id DESC);
  CREATE INDEX runs_status ON runs(status);
  CREATE TABLE run_messages (
    run_id        TEXT NOT NULL REFERENCES runs(run_id),
    position      INTEGER NOT NULL,
    message_json  TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
  ) WITHOUT ROWID;
  CREATE TABLE run_iterations (
    run_id         TEXT NOT NULL REFERENCES runs(run_id),
    iteration      INTEGER NOT NULL,
    model          TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    latency_ms     INTEGER NOT NULL,
    input_tokens   INTEGER NOT NULL,
    output_tokens  INTEGER NOT NULL,
    finish_reason  TEXT NOT NULL,
    text           TEXT NOT NULL,
    request_hash   TEXT NOT NULL,
    response_hash  TEXT NOT NULL,
    audit_seq      INTEGER,
    PRIMARY KEY (run_id, iteration)
  ) WITHOUT ROWID;
  CREATE TABLE run_tool_calls (
    run_id       TEXT NOT NULL REFERENCES runs(run_id),
    iteration    INTEGER NOT NULL,
    position     INTEGER NOT NULL,
    call_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    step_id      TEXT,
    outcome      TEXT,
    error_code   TEXT,
    result       TEXT,
    started_at   TEXT,
    duration_ms  INTEGER,
    PRIMARY KEY (run_id, iteration, position)
  ) WITHOUT ROWID;
  CREATE INDEX run_tool_calls_step ON run_tool_calls(step_id) WHERE step_id IS NOT NULL;
  CREATE TABLE questions (
    question_id  TEXT PRIMARY KEY,
    run_id       TEXT,
    asked_by     TEXT NOT NULL,
    agent        TEXT,
    text         TEXT NOT NULL,
    asked_at     TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    status       TEXT NOT NULL,
    answer       TEXT,
    answered_at  TEXT
  );
  CREATE INDEX questions_asked ON questions(asked_at DESC);
  CREATE INDEX questions_waiting ON questions(status, expires_at);
  `,
  // The stop switch (src/domain/host-pause.ts): the host's own settings that are not the policy, one
  // row a name (`paused`: who stopped all agents, when, why), kept here so they survive a restart. A
  // step's consent clock stands still while the host is paused: the time it was held is added to its
  // deadline at resume and forgotten at its next transition (a new clock starts then).
  `
  CREATE TABLE host_state (
    name        TEXT PRIMARY KEY,
    value_json  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
  );
  ALTER TABLE steps ADD COLUMN consent_held_ms INTEGER NOT NULL DEFAULT 0;
  `,
  // Why a step's dry run could not be made (its project image did not build, the sandbox refused it…),
  // kept on the step so the decision shows it, not only its audit record; cleared by its next preview.
  `
  ALTER TABLE steps ADD COLUMN preview_error TEXT;
  `,
  // Skills (docs/skills.md): a row is never changed in what it runs (code, schemas, capabilities,
  // budget); an edit or a new version is a new row. State, trial counters, the pin and the
  // examples' results change, each in one transaction with its skill.* audit record.
  `
  CREATE TABLE skills (
    skill_id          TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    version           INTEGER NOT NULL,
    purpose           TEXT NOT NULL,
    code              TEXT NOT NULL,
    code_hash         TEXT NOT NULL,
    input_schema      TEXT NOT NULL,
    output_schema     TEXT NOT NULL,
    capabilities_json TEXT NOT NULL,
    budget_json       TEXT NOT NULL,
    examples_json     TEXT NOT NULL,
    example_results   TEXT NOT NULL DEFAULT '[]',
    state             TEXT NOT NULL,
    reason            TEXT,
    proposed_by       TEXT NOT NULL,
    parent_id         TEXT,
    from_step_id      TEXT,
    pin_json          TEXT,
    trial_uses        INTEGER NOT NULL DEFAULT 0,
    trial_since       TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    UNIQUE (name, version)
  );
  CREATE INDEX skills_state ON skills(state);
  `,
  // A large step's body apart from its row (step-bodies.ts): every change of status rewrites the whole steps row through the
  // WAL, so a 10 MB writeFile's content was written again at each of its half-dozen transitions. Its full canonical JSON is
  // written here once; the row keeps the step without args.content (body_apart = 1), which is all that queries, filters and
  // indexes read of it. Rows written before this migration keep their whole step in the row (body_apart = 0) and read as before.
  `
  CREATE TABLE step_bodies (
    step_id    TEXT PRIMARY KEY REFERENCES steps(step_id),
    step_json  TEXT NOT NULL
  );
  ALTER TABLE steps ADD COLUMN body_apart INTEGER NOT NULL DEFAULT 0;
  `,
  // A large preview apart from its row (step-previews.ts): a 10 MB write's 1.4 MB diff was rewritten through the WAL at
  // each change of status. It is written here once, under an id never used again; the row keeps that id (preview_ref) and
  // preview_json NULL. Rows written before this migration keep their preview in preview_json (preview_ref NULL).
  `
  CREATE TABLE step_previews (
    preview_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id       TEXT NOT NULL UNIQUE REFERENCES steps(step_id),
    preview_json  TEXT NOT NULL
  );
  ALTER TABLE steps ADD COLUMN preview_ref INTEGER;
  `,
  // A large write's content kept once, as the backup blob of its post-image (step-bodies.ts): step_bodies then holds the
  // step without its content and the blob's sha256 (content_blob). Bodies stored before keep their whole JSON (NULL here).
  `
  ALTER TABLE step_bodies ADD COLUMN content_blob TEXT;
  `,
  // A skill's plain errors in a row (docs/skills.md): an active skill is disabled after the policy's
  // skills.maxConsecutiveErrors of them; a use that behaves sets it back to 0.
  `
  ALTER TABLE skills ADD COLUMN errors_in_row INTEGER NOT NULL DEFAULT 0;
  `,
  // What holds a step back in its plan (an earlier step still undecided, or one that ended without running) is read by
  // plan and status, nearest first: by steps_plan alone that walked back over every earlier step of the plan, each
  // executed one included, at every read of a step a plan of 500 steps ran forward (step-repository.ts holdersBefore).
  `
  CREATE INDEX IF NOT EXISTS steps_plan_status ON steps(plan_id, status, position);
  `,
  // A large plan is stored in several commits (proposals.ts), so no one commit holds the host's thread for long. Until its
  // last step is stored it is listed here: none of its steps is previewed or run, and a plan still listed at the next open
  // (the host stopped mid-store) has its stored steps cancelled, never run.
  `
  CREATE TABLE plans_being_stored (
    plan_id  TEXT PRIMARY KEY REFERENCES plans(plan_id),
    steps    INTEGER NOT NULL
  );
  `,
];
