import type { Actor } from '../../domain/actor.js';
import { ExecutorError } from '../../domain/errors.js';
import { MAX_PAUSE_REASON_CHARS, pauseView, type HostPause, type HostPauseView } from '../../domain/host-pause.js';
import { planCanMoveWithoutPerson } from '../../domain/plan-order.js';
import type { StepRecord } from '../../domain/step-record.js';
import { collapsePlainSpace } from '../../domain/visible-text.js';
import type { LiveRun } from '../live-runs.js';
import { isNoSpace } from '../../store/storage-errors.js';
import { SYSTEM_ACTOR, type StepDesk } from '../step-desk.js';

/** How many step ids a host.paused or host.resumed record names at most (the count is always whole). */
const LISTED_STEPS = 200;

/** What the stop switch sets off elsewhere: a real run is cancelled as the person's Cancel does it; at resume the plans are taken up again. */
export interface StopSwitchPort {
  /** Cancels a real run under way (decisions.ts), its record saying the person stopped all agents; resolves once it is gone. */
  stopRunForPause(live: LiveRun, actor: Actor): Promise<StepRecord>;
  schedulePreview(planId: string, actor: Actor): void;
  sweepExpired(): void;
  /** Disables every skill that is usable or waiting (rooms/skills.ts), inside the pause's transaction; answers them. */
  disableSkills(actor: Actor): { skillId: string; name: string; version: number }[];
  /** Sends every skill being checked back to draft (rooms/skills.ts), inside the pause's transaction; answers them. */
  stopSkillChecks(actor: Actor): { skillId: string; name: string; version: number }[];
}

/**
 * The stop switch ("Stop all agents", `executor pause` / `executor resume`). Pausing is one
 * transaction (host_state and its host.paused record), then at once: real sandbox runs under way are
 * cancelled (their steps end `cancelled`, saying the person stopped all agents; a run stopped while it
 * applied keeps its backups), dry runs are stopped (their steps stay `evaluated` and are previewed
 * again at resume), agent code no step shows live is killed (desk.agentCode: a skill's quarantine
 * examples, whose skill goes back to draft; a dry run asked for by name, answered HOST_PAUSED), and every room checks `desk.paused` before it starts anything: proposals,
 * approvals, edits and dry runs are refused with HOST_PAUSED, approved steps do not start, and
 * nothing expires. Rejecting, cancelling and reverting (without force) stay open: they only take
 * away. Resume adds the time each waiting step was held to its consent deadline (its clock stood
 * still), records host.resumed, and takes up the plans that can move on their own.
 */
export class StopSwitch {
  constructor(
    private readonly desk: StepDesk,
    private readonly port: StopSwitchPort,
  ) {}

  view(forAgent: boolean): HostPauseView {
    return pauseView(this.desk.paused, forAgent);
  }

  /**
   * Stops all agents. Answers once the cancelled runs' containers and workers are gone (each bounded
   * by CANCEL_WAIT_MS); the pause itself, its record and its event come first, before any await. A
   * second pause while paused changes nothing and records nothing.
   */
  async pause(actor: Actor, reason?: string): Promise<HostPauseView> {
    const { desk } = this;
    const said = reason === undefined ? '' : collapsePlainSpace(reason);
    if (said.length > MAX_PAUSE_REASON_CHARS) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `A pause reason is at most ${MAX_PAUSE_REASON_CHARS} characters; this one has ${said.length}.`,
      );
    }
    if (desk.paused) return this.view(false);
    const pause: HostPause = { pausedAt: new Date().toISOString(), by: actor, reason: said || null };
    const runs = desk.liveRuns.list();
    const realRuns = runs.filter((run) => run.phase === 'realRun').map((run) => run.stepId);
    const dryRuns = runs.filter((run) => run.phase === 'dryRun').map((run) => run.stepId);
    const held = desk.steps.expiring();
    let disabledSkills: { skillId: string; name: string; version: number }[] = [];
    let stoppedChecks: { skillId: string; name: string; version: number }[] = [];
    const record = () => {
      disabledSkills = [];
      stoppedChecks = [];
      desk.db.transaction(() => {
        desk.hostState.setPause(pause);
        // The stop switch disables all skills at once, in the same transaction: no skill outlives the pause by a use.
        disabledSkills = this.port.disableSkills(actor);
        // A skill still being checked is no skill yet: its check is stopped (below) and it waits in draft to be checked again.
        stoppedChecks = this.port.stopSkillChecks(actor);
        desk.audit.append({
          kind: 'host.paused',
          actor,
          detail: {
            reason: pause.reason,
            cancelledSteps: realRuns,
            stoppedDryRuns: dryRuns,
            heldSteps: held.length,
            heldStepIds: held.slice(0, LISTED_STEPS).map((record) => record.step.id),
            disabledSkills: disabledSkills.map((skill) => skill.skillId),
            stoppedSkillChecks: stoppedChecks.map((skill) => skill.skillId),
            stoppedAgentCode: desk.agentCode.size,
          },
        });
      })();
    };
    try {
      record();
    } catch (error) {
      // The brake holds on a full data directory too: in force now, its record (and the skills it
      // disables) written once there is room, before recording resumes and anything held goes on.
      if (!isNoSpace(error) || desk.closed) throw error;
      // Kept in the data directory's reserve too: a host killed before space returns is paused at its next start.
      desk.hold.holdRecord('the stop switch (host.paused)', record, desk.describeError(error), { kind: 'pause', pause });
    }
    desk.paused = pause;
    for (const skill of disabledSkills)
      desk.events.emit('skill', {
        ...skill,
        state: 'disabled',
        notice: `Skill ${skill.name} v${skill.version} was disabled: the person stopped all agents`,
      });
    for (const skill of stoppedChecks)
      desk.events.emit('skill', {
        ...skill,
        state: 'draft',
        notice: `The check of skill ${skill.name} v${skill.version} was stopped: the person stopped all agents. It waits in draft; check it again after resuming.`,
      });
    // Each real run's step is cancelled synchronously inside stopRunForPause (before its first await), so
    // every surface hears the cancelled steps and the pause together; the kills are awaited below.
    const stopping: Promise<unknown>[] = [];
    for (const stepId of realRuns) {
      const live = desk.liveRuns.get(stepId);
      if (live)
        stopping.push(
          this.port
            .stopRunForPause(live, actor)
            .catch((error: unknown) => desk.log(`executor: stopping ${stepId} on pause: ${String(error)}`)),
        );
    }
    // A dry run changes nothing: it is stopped, and its step waits `evaluated` to be previewed again at resume.
    for (const stepId of dryRuns) desk.liveRuns.get(stepId)?.cancel();
    // Agent code no step shows live (quarantine examples, a dry run asked for by name) is killed too; the pause answers once it is gone.
    stopping.push(desk.agentCode.stopAll());
    desk.events.emit('hostPause', pause);
    await Promise.all(stopping);
    return this.view(false);
  }

  /**
   * Lets agents work again. Resuming a host that is not paused changes nothing and records nothing.
   * `takeUp: false` (the CLI without a host) leaves the held plans to the next host's start, which
   * takes them up as restart recovery does: a one-command process never starts a dry run or a step.
   */
  resume(actor: Actor, options: { takeUp?: boolean } = {}): HostPauseView {
    const { desk } = this;
    const pause = desk.paused;
    if (!pause) return this.view(false);
    // A pause taken while the disk was full is recorded before its resume is (throws while still full).
    try {
      desk.hold.writeRecords();
    } catch (error) {
      throw isNoSpace(error) ? desk.heldError() : error;
    }
    const now = Date.now();
    const pausedAtMs = Date.parse(pause.pausedAt);
    // Each waiting step's clock stood still from the pause (or from when it started, if later) until now.
    const held = desk.steps.expiring().map((record) => {
      const since = Date.parse(record.status === 'approved' && record.approval ? record.approval.at : record.updatedAt);
      return { stepId: record.step.id, ms: now - Math.max(pausedAtMs, Number.isFinite(since) ? since : pausedAtMs) };
    });
    desk.db.transaction(() => {
      desk.hostState.setPause(null);
      desk.steps.addConsentHeld(held);
      desk.audit.append({
        kind: 'host.resumed',
        actor,
        detail: {
          pausedAt: pause.pausedAt,
          pausedBy: pause.by,
          reason: pause.reason,
          pausedMs: Math.max(0, now - pausedAtMs),
          heldSteps: held.length,
          heldStepIds: held.slice(0, LISTED_STEPS).map((entry) => entry.stepId),
        },
      });
    })();
    desk.paused = null;
    desk.events.emit('hostPause', null);
    // The deadlines moved: the sweep arms the timer again (it did not while paused).
    this.port.sweepExpired();
    if (options.takeUp === false) return this.view(false);
    // What was held moves on as after a restart: previews made, approved steps run if their approval holds.
    for (const planId of desk.steps.plansWith(['evaluated', 'approved'])) {
      if (planCanMoveWithoutPerson(desk.steps.planSteps(planId))) this.port.schedulePreview(planId, SYSTEM_ACTOR);
    }
    return this.view(false);
  }
}
