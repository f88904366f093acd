import { useState } from 'react';
import type { SkillRecord } from '../../src/domain/skill.js';
import { CodeBlock } from './code-view.js';
import { Dialog } from './dialog.js';
import { ErrorBox } from './error-box.js';

/*
 * The form a skill is written in by the person: "Save as skill" from an executed runCode step (the
 * step's code, the rest prefilled from it), and Edit of an existing skill (its code too may change).
 * Either way what is sent goes through quarantine and validation again before it may be approved.
 */

export interface SkillFormValues {
  name: string;
  purpose: string;
  code: string;
  inputSchema: string;
  outputSchema: string;
  capabilities: string;
  budget: string;
  examples: string;
}

/** The fields as the host takes them; a field that is not JSON is a clear error naming it, never a half-sent form. */
export function parseSkillForm(values: SkillFormValues): { ok: true; fields: Record<string, unknown> } | { ok: false; message: string } {
  const fields: Record<string, unknown> = { name: values.name.trim(), purpose: values.purpose.trim(), code: values.code };
  const json: [keyof SkillFormValues, string][] = [
    ['inputSchema', 'Input schema'],
    ['outputSchema', 'Output schema'],
    ['capabilities', 'Capabilities'],
    ['budget', 'Budget'],
    ['examples', 'Examples'],
  ];
  for (const [key, label] of json) {
    try {
      fields[key] = JSON.parse(values[key]);
    } catch (error) {
      return { ok: false, message: `${label} is not JSON: ${(error as Error).message}` };
    }
  }
  if (!Array.isArray(fields.examples))
    return { ok: false, message: 'Examples is a JSON list of inputs, one per example: [{…}, {…}, {…}].' };
  return { ok: true, fields };
}

export function formValuesOf(
  skill: Pick<SkillRecord, 'name' | 'purpose' | 'code' | 'inputSchema' | 'outputSchema' | 'capabilities' | 'budget' | 'examples'>,
): SkillFormValues {
  return {
    name: skill.name,
    purpose: skill.purpose,
    code: skill.code,
    inputSchema: JSON.stringify(skill.inputSchema, null, 2),
    outputSchema: JSON.stringify(skill.outputSchema, null, 2),
    capabilities: JSON.stringify(skill.capabilities, null, 2),
    budget: JSON.stringify(skill.budget, null, 2),
    examples: JSON.stringify(skill.examples, null, 2),
  };
}

export function SkillForm({
  title,
  initial,
  codeEditable,
  nameEditable,
  note,
  submitLabel,
  onCancel,
  onSubmit,
}: {
  title: string;
  initial: SkillFormValues;
  /** Save as skill keeps the step's code as it ran; Edit may change it. */
  codeEditable: boolean;
  /** A new version keeps its skill's name. */
  nameEditable: boolean;
  note: string;
  submitLabel: string;
  onCancel(): void;
  /** Resolves when the host has answered (after quarantine and validation); a rejection is shown in the form. */
  onSubmit(fields: Record<string, unknown>): Promise<void>;
}) {
  const [values, setValues] = useState(initial);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const field = (key: keyof SkillFormValues) => ({
    id: `skill-form-${key}`,
    value: values[key],
    disabled: busy,
    onChange: (event: { target: { value: string } }) => {
      // What was wrong was said about the values as they were; the person is changing them now.
      setError(null);
      setValues((previous) => ({ ...previous, [key]: event.target.value }));
    },
  });
  const submit = async () => {
    const parsed = parseSkillForm(values);
    if (!parsed.ok) {
      setError({ code: 'INVALID_INPUT', message: parsed.message });
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await onSubmit(parsed.fields);
    } catch (caught) {
      setError(caught);
      setBusy(false);
    }
  };
  return (
    <Dialog title={title} onCancel={onCancel} className="wide skill-form-dialog">
      <form
        className="skill-form"
        aria-busy={busy ? 'true' : undefined}
        onSubmit={(event) => {
          event.preventDefault();
          void submit();
        }}
      >
        <p className="muted small-note">{note}</p>
        <label htmlFor="skill-form-name">Name (lowercase words joined by “_”; agents call it as skill_name)</label>
        <input {...field('name')} required maxLength={48} autoFocus={nameEditable} readOnly={!nameEditable} spellCheck={false} />
        <label htmlFor="skill-form-purpose">Purpose</label>
        <textarea {...field('purpose')} required rows={2} maxLength={2000} autoFocus={!nameEditable} />
        {codeEditable ? (
          <>
            <label htmlFor="skill-form-code">Code (reads its input as `input`, returns its output)</label>
            <textarea {...field('code')} className="code-input" rows={8} spellCheck={false} />
          </>
        ) : (
          <>
            <p className="form-label">Code (as the step ran it)</p>
            <CodeBlock code={values.code} language="javascript" label="Code of the new skill" compact />
          </>
        )}
        <div className="skill-form-columns">
          <div>
            <label htmlFor="skill-form-inputSchema">Input schema (JSON Schema, an object)</label>
            <textarea {...field('inputSchema')} className="code-input" rows={6} spellCheck={false} />
          </div>
          <div>
            <label htmlFor="skill-form-outputSchema">Output schema (JSON Schema)</label>
            <textarea {...field('outputSchema')} className="code-input" rows={6} spellCheck={false} />
          </div>
        </div>
        <label htmlFor="skill-form-examples">Examples (a JSON list of at least 3 inputs; each runs in quarantine)</label>
        <textarea {...field('examples')} className="code-input" rows={4} spellCheck={false} />
        <div className="skill-form-columns">
          <div>
            <label htmlFor="skill-form-capabilities">Capabilities (fetch hosts, readFile, kbSearch)</label>
            <textarea {...field('capabilities')} className="code-input" rows={4} spellCheck={false} />
          </div>
          <div>
            <label htmlFor="skill-form-budget">Budget per use (timeMs, calls)</label>
            <textarea {...field('budget')} className="code-input" rows={4} spellCheck={false} />
          </div>
        </div>
        <ErrorBox error={error} onDismiss={() => setError(null)} />
        {busy ? (
          <p role="status" className="muted">
            Running its examples in quarantine…
          </p>
        ) : null}
        <div className="dialog-actions">
          <button type="button" className="ghost" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy}>
            {submitLabel}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
