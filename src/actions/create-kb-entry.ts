import type { ActionModule } from './action-module.js';

const entryIdFor = (stepId: string) => `kb-${stepId}`;

export const createKBEntry: ActionModule<'createKBEntry'> = {
  action: 'createKBEntry',
  reversible: true,
  summarize: (args) => `Add knowledge-base entry "${args.title}"`,
  assess: () => ({
    risk: 'LOW',
    reasons: ["Adds an entry to Executor's own knowledge base; nothing outside it changes."],
    mitigations: ['Revert removes the entry.'],
  }),
  async simulate(args) {
    return { kind: 'kbEntry', title: args.title, content: args.content, tags: args.tags ?? [] };
  },
  async run(args, ctx) {
    return {
      fileChanges: [],
      async apply() {
        const entry = ctx.kb.insert({
          entryId: entryIdFor(ctx.stepId),
          stepId: ctx.stepId,
          title: args.title,
          content: args.content,
          tags: args.tags ?? [],
        });
        return { entryId: entry.entryId };
      },
    };
  },
  async revertOther(record, ctx) {
    const removed = ctx.kb.delete(entryIdFor(record.step.id));
    return { entryId: entryIdFor(record.step.id), removed };
  },
};
