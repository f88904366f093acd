import { useCallback, useEffect, useState } from 'react';
import type { SkillEvent } from '../../src/domain/skill.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { playChime, raiseNotice, soundWanted, windowInView } from '../attention.js';
import { MarkedText, markedPlainText } from './marked-text.js';

/*
 * What the host tells the person about a skill without being asked: a skill disabled (a trial use
 * that erred, overran its budget, broke its schema or called beyond what it declared; a stored copy
 * that no longer matches its pin). Shown above every view until dismissed, and as a notification
 * (with the chime, if wanted) when the window is not in view, like a newly waiting step.
 */

const MAX_SKILL_NOTICES = 5;

export interface SkillNotice {
  skillId: string;
  text: string;
}

/** The notices of `skill` events that carry one and are not the person's own decision in this window. */
export function useSkillNotices(api: ExecutorClient): { notices: SkillNotice[]; dismiss(skillId: string): void } {
  const [notices, setNotices] = useState<SkillNotice[]>([]);
  useEffect(() => {
    let off: (() => void) | undefined;
    let cancelled = false;
    void api
      .on('skill', (event: SkillEvent) => {
        // A rejection is the person's own act (or the pipeline's answer the agent already got); a disable is news.
        if (!event.notice || event.state !== 'disabled') return;
        const notice = { skillId: event.skillId, text: event.notice };
        setNotices((previous) => [notice, ...previous.filter((seen) => seen.skillId !== event.skillId)].slice(0, MAX_SKILL_NOTICES));
        if (soundWanted()) playChime();
        if (!windowInView())
          raiseNotice({ title: `skill ${markedPlainText(event.name)} was disabled`, body: markedPlainText(event.notice) });
      })
      .then(
        (unsubscribe) => (cancelled ? unsubscribe() : (off = unsubscribe)),
        () => undefined,
      );
    return () => {
      cancelled = true;
      off?.();
    };
  }, [api]);
  const dismiss = useCallback((skillId: string) => setNotices((previous) => previous.filter((notice) => notice.skillId !== skillId)), []);
  return { notices, dismiss };
}

/**
 * How many skills wait for the person's approval (the Skills link's count), read again on each
 * `skill` event; a skill that newly waits while the window is away raises a notification, as a step does.
 */
export function useSkillsAwaiting(api: ExecutorClient): number {
  const [count, setCount] = useState(0);
  useEffect(() => {
    let alive = true;
    let off: (() => void) | undefined;
    const load = () =>
      void api.listSkills({ states: ['awaiting_owner'] }).then(
        (listed) => alive && setCount(listed.skills.length),
        () => undefined,
      );
    load();
    void api
      .on('skill', (event: SkillEvent) => {
        load();
        if (event.state !== 'awaiting_owner') return;
        if (soundWanted()) playChime();
        if (!windowInView())
          raiseNotice({
            title: 'a skill waits for your approval',
            body: `Skill ${markedPlainText(event.name)} v${event.version} passed quarantine and validation.`,
          });
      })
      .then(
        (unsubscribe) => (alive ? (off = unsubscribe) : unsubscribe()),
        () => undefined,
      );
    return () => {
      alive = false;
      off?.();
    };
  }, [api]);
  return count;
}

export function SkillNotices({
  notices,
  onDismiss,
  onShow,
}: {
  notices: SkillNotice[];
  onDismiss(skillId: string): void;
  onShow(skillId: string): void;
}) {
  if (notices.length === 0) return null;
  return (
    <div role="log" aria-live="polite" aria-label="Skills disabled">
      <ul className="rule-notices">
        {notices.map((notice) => (
          <li key={notice.skillId} className="rule-notice skill-notice" data-testid="skill-notice">
            <span className="notice-text">
              <MarkedText text={notice.text} />
            </span>
            <button type="button" className="small" onClick={() => onShow(notice.skillId)}>
              Show skill
            </button>
            <button
              type="button"
              className="small ghost"
              aria-label="Dismiss the notice about this skill"
              onClick={() => onDismiss(notice.skillId)}
            >
              Dismiss
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
