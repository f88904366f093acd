import { SECRET_KEY_PATTERN } from './secret-names.js';

/**
 * Secrets typed inside a longer text, most often a command line (`curl -H "Authorization: Bearer …"`,
 * `mysql -pHunter2`, `FOO_TOKEN=… cmd`, `--password=…`): each secret part is replaced by its salted
 * digest and the rest stays readable, so a reviewer still sees what ran. The forms caught are listed
 * in docs/audit.md ("Secrets inside a text"); `audit hash` answers for the part that was replaced
 * (the value without its quotes, the token without its "Bearer").
 */

/** A value as a shell word: quoted (the quotes stay, their content is the secret) or bare up to a separator. */
const VALUE = String.raw`("[^"\n]*"|'[^'\n]*'|[^\s"'\`&|;<>()]+)`;

/** The word after an option and a space: never another option (`--token --user bob` asks for the token). */
const OPERAND = String.raw`("[^"\n]*"|'[^'\n]*'|[^\s"'\`&|;<>()-][^\s"'\`&|;<>()]*)`;

/** Cheap test first: most strings hold none of these and skip every pattern below. */
const MAYBE =
  /pass|pwd|secret|token|key|auth|cookie|credential|session|:\/\/|-p|-u|--user|sk-|gh[pousr]_|github_pat_|AKIA|ASIA|xox|eyJ|AIza|glpat-|npm_/i;

const MYSQL_FAMILY =
  /(?:^|[\s;&|(/`"'])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mariadb|mariadb-dump|mariadb-admin)(?=\s)/;

/** Tokens that are secrets by their look wherever they stand (the unanchored value patterns of recordable-value.ts). */
const TOKENS = [
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g,
  /\bnpm_[A-Za-z0-9]{36}\b/g,
];

const DIGESTED = /^hmac-sha256:/;

/** The digest in place of a shell word's value, its quotes kept. Empty values and digests already made stay. */
function digestWord(word: string, digest: (value: string) => string): string {
  const quote = word[0] === '"' || word[0] === "'" ? word[0] : '';
  const inner = quote ? word.slice(1, -1) : word;
  if (inner === '' || DIGESTED.test(inner)) return word;
  return `${quote}${digest(inner)}${quote}`;
}

export function redactInlineSecrets(text: string, digest: (value: string) => string): string {
  if (!MAYBE.test(text)) return text;
  let out = text;
  // NAME=value (an environment assignment, `export NAME=…`, a key=value argument) whose name reads as a secret's.
  out = out.replace(
    new RegExp(String.raw`(^|[\s;&|(\`"'])([A-Za-z_][A-Za-z0-9_.-]*)=${VALUE}`, 'g'),
    (whole, lead: string, name: string, value: string) =>
      SECRET_KEY_PATTERN.test(name) ? `${lead}${name}=${digestWord(value, digest)}` : whole,
  );
  // --name=value and --name value, for an option whose name reads as a secret's (--password, --token, --api-key, --client-secret).
  out = out.replace(
    new RegExp(String.raw`(^|\s)--([A-Za-z0-9][A-Za-z0-9_-]*)(?:=${VALUE}|([ \t]+)${OPERAND})`, 'g'),
    (whole, lead: string, name: string, glued: string | undefined, gap: string | undefined, operand: string | undefined) => {
      if (!SECRET_KEY_PATTERN.test(name)) return whole;
      return glued !== undefined
        ? `${lead}--${name}=${digestWord(glued, digest)}`
        : `${lead}--${name}${gap}${digestWord(operand!, digest)}`;
    },
  );
  // mysql and its kin take the password glued to -p (`-pHunter2`); elsewhere -p means other things (mkdir -p, ssh -p 22).
  if (MYSQL_FAMILY.test(out))
    out = out.replace(
      new RegExp(String.raw`(^|\s)-p${VALUE}`, 'g'),
      (_whole, lead: string, value: string) => `${lead}-p${digestWord(value, digest)}`,
    );
  out = out.replace(
    new RegExp(String.raw`(^|[\s;&|(\`"'])sshpass([ \t]+)-p([ \t]*)${VALUE}`, 'g'),
    (_whole, lead: string, gap: string, joint: string, value: string) => `${lead}sshpass${gap}-p${joint}${digestWord(value, digest)}`,
  );
  // curl -u user:password / --user user:password: the part after the first colon.
  out = out.replace(
    new RegExp(String.raw`(^|\s)(-u|--user)(=|[ \t]+)${VALUE}`, 'g'),
    (whole, lead: string, flag: string, joint: string, value: string) => {
      const quote = value[0] === '"' || value[0] === "'" ? value[0] : '';
      const inner = quote ? value.slice(1, -1) : value;
      const colon = inner.indexOf(':');
      if (colon < 0 || colon === inner.length - 1 || DIGESTED.test(inner.slice(colon + 1))) return whole;
      return `${lead}${flag}${joint}${quote}${inner.slice(0, colon + 1)}${digest(inner.slice(colon + 1))}${quote}`;
    },
  );
  // A header whose name reads as a secret's (Authorization, Proxy-Authorization, Cookie, X-Api-Key): after a Bearer/Basic/Token scheme
  // the token, else the whole value up to its quote or the line's end.
  out = out.replace(
    /(^|[\s"'])([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*(?:(Bearer|Basic|Token|Digest|Negotiate)[ \t]+)?([^\n"']*[^\s"'])/gi,
    (whole, lead: string, name: string, scheme: string | undefined, value: string) => {
      if (!SECRET_KEY_PATTERN.test(name) || DIGESTED.test(value)) return whole;
      if (scheme) {
        const token = /^\S+/.exec(value)![0];
        return `${lead}${name}: ${scheme} ${DIGESTED.test(token) ? token : digest(token)}${value.slice(token.length)}`;
      }
      return `${lead}${name}: ${digest(value)}`;
    },
  );
  // scheme://user:password@host: the password.
  out = out.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s/@:"']*):([^\s/@"']+)@/gi, (whole, start: string, password: string) =>
    DIGESTED.test(password) ? whole : `${start}:${digest(password)}@`,
  );
  for (const token of TOKENS) out = out.replace(token, (match) => digest(match));
  return out;
}
