/** A knowledge-base entry as createKbEntry stored it: what the light sandbox's search tool reads back. */
export interface KbEntry {
  entryId: string;
  stepId: string;
  title: string;
  content: string;
  tags: string[];
  createdAt: string;
}
