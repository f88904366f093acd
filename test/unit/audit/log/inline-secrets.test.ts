import { describe, expect, it } from 'vitest';
import { redactInlineSecrets } from '../../../../src/audit/log/inline-secrets.js';
import { recordableValue } from '../../../../src/audit/log/recordable-value.js';

/** A readable stand-in for the salted digest: the test sees exactly which part was taken as the secret. */
const mark = (value: string) => `hmac-sha256:<${value}>`;
const redact = (text: string) => redactInlineSecrets(text, mark);

describe('secrets inside a command line are digested where they stand, the rest kept', () => {
  it.each([
    [
      'curl -H "Authorization: Bearer abc123def456" https://api.example.com',
      'curl -H "Authorization: Bearer hmac-sha256:<abc123def456>" https://api.example.com',
    ],
    ["curl -H 'Authorization: token ghx-not-a-pattern-1234' x", "curl -H 'Authorization: token hmac-sha256:<ghx-not-a-pattern-1234>' x"],
    ['curl -H "X-Api-Key: k3y-v4lue" -H "Accept: json" u', 'curl -H "X-Api-Key: hmac-sha256:<k3y-v4lue>" -H "Accept: json" u'],
    ['curl -H "Cookie: sid=abc; theme=dark" u', 'curl -H "Cookie: hmac-sha256:<sid=abc; theme=dark>" u'],
    ['mysql -uroot -pHunter2 shop', 'mysql -uroot -phmac-sha256:<Hunter2> shop'],
    ["mysqldump -p'Hunter 2' shop > x.sql", "mysqldump -p'hmac-sha256:<Hunter 2>' shop > x.sql"],
    ['FOO_TOKEN=abc123 ./deploy.sh', 'FOO_TOKEN=hmac-sha256:<abc123> ./deploy.sh'],
    ['export PGPASSWORD="s3cr3t word" && psql', 'export PGPASSWORD="hmac-sha256:<s3cr3t word>" && psql'],
    ['env API_KEY=xyz DEBUG=1 node app.js', 'env API_KEY=hmac-sha256:<xyz> DEBUG=1 node app.js'],
    ['Runs `mysql -uroot -pHunter2 db` (programs: mysql)', 'Runs `mysql -uroot -phmac-sha256:<Hunter2> db` (programs: mysql)'],
    ['Runs `FOO_TOKEN=abc ./x` on a copy', 'Runs `FOO_TOKEN=hmac-sha256:<abc> ./x` on a copy'],
    ['Runs `mysql -pHunter2`', 'Runs `mysql -phmac-sha256:<Hunter2>`'],
    ['tool --password=hunter2 --user bob', 'tool --password=hmac-sha256:<hunter2> --user bob'],
    ['tool --token hunter2 run', 'tool --token hmac-sha256:<hunter2> run'],
    ['gh auth login --with-token --api-key=zzz', 'gh auth login --with-token --api-key=hmac-sha256:<zzz>'],
    ['curl -u alice:wonderland https://x', 'curl -u alice:hmac-sha256:<wonderland> https://x'],
    ['git clone https://bob:pa55@github.com/o/r.git', 'git clone https://bob:hmac-sha256:<pa55>@github.com/o/r.git'],
    ['sshpass -p hunter2 ssh host', 'sshpass -p hmac-sha256:<hunter2> ssh host'],
    ['echo sk-proj-abcdefghijklmnop1234 | tool', 'echo hmac-sha256:<sk-proj-abcdefghijklmnop1234> | tool'],
    ['aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE', 'aws configure set aws_access_key_id hmac-sha256:<AKIAIOSFODNN7EXAMPLE>'],
  ])('%s', (line, expected) => {
    expect(redact(line)).toBe(expected);
  });

  it.each([
    'mkdir -p build/out && cp -pr a b',
    'ssh -p 2222 host uptime',
    'docker run -p 8080:80 nginx',
    'tool --password --user bob',
    'grep -r "keyboard" src',
    'curl https://example.com/a?b=c',
    'ls -la /home/me',
    'echo "a skeleton key"',
  ])('leaves %s as it is', (line) => {
    expect(redact(line)).toBe(line);
  });

  it('in a record: the command keeps its words, the secret is a salted digest, a file content is never rewritten', () => {
    const salt = Buffer.alloc(32, 1);
    const recorded = recordableValue(
      { command: 'mysql -pHunter2 shop', argv: ['curl', '-H', 'Authorization: Bearer abcdefghijkl'], content: 'password: hunter2\n' },
      salt,
    ) as Record<string, unknown>;
    expect(recorded.command).toMatch(/^mysql -phmac-sha256:[0-9a-f]{64} shop$/);
    expect((recorded.argv as string[])[2]).toMatch(/^Authorization: Bearer hmac-sha256:[0-9a-f]{64}$/);
    expect(recorded.content).toBe('password: hunter2\n');
    expect(JSON.stringify(recorded)).not.toMatch(/Hunter2|abcdefghijkl/);
  });
});
