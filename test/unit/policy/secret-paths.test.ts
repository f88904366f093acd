import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { filesystemIgnoresCase, platformIgnoresCase } from '../../../src/policy/path-patterns.js';
import { DEFAULT_SECRET_GLOBS, PolicySchema } from '../../../src/policy/policy-file.js';
import { matchingSecretGlob, secretPathMatcher } from '../../../src/policy/secret-paths.js';
import { exclusionOf } from '../../../src/sandbox/docker/scratch-copy.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const CREDENTIAL_FILES = [
  '.env',
  'app/.env.production',
  'id_rsa',
  'id_ed25519',
  'home/.ssh/id_ecdsa',
  'id_dsa.pub',
  'keys/server.pem',
  'tls/server.key',
  'putty.ppk',
  'cert.p12',
  'cert.pfx',
  'android/release.keystore',
  'app.jks',
  'service.keytab',
  'vault.kdbx',
  'vpn/work.ovpn',
  '.gnupg/private-keys-v1.d/abc.key',
  '.gnupg/pubring.kbx',
  '.password-store/mail.gpg',
  '.npmrc',
  'packages/web/.npmrc',
  '.yarnrc.yml',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.config/gh/hosts.yml',
  '.gem/credentials',
  '.cargo/credentials.toml',
  '.m2/settings.xml',
  '.gradle/gradle.properties',
  '.aws/credentials',
  '.aws/config',
  '.aws/sso/cache/token.json',
  '.azure/msal_token_cache.json',
  '.config/gcloud/application_default_credentials.json',
  '.config/gcloud/legacy_credentials/me/adc.json',
  '.oci/config',
  '.kube/config',
  'deploy/kubeconfig',
  'prod.kubeconfig',
  '.docker/config.json',
  '.dockercfg',
  '.boto',
  '.s3cfg',
  '.vault-token',
  '.terraformrc',
  '.terraform.d/credentials.tfrc.json',
  'infra/terraform.tfvars',
  'infra/prod.auto.tfvars',
  'infra/terraform.tfstate',
  'infra/terraform.tfstate.backup',
  '.pgpass',
  '.my.cnf',
  'credentials.json',
  'client_secret_1234.apps.googleusercontent.com.json',
  '.htpasswd',
  'config/secrets.yml',
];

const ORDINARY = ['README.md', 'src/index.ts', 'package.json', '.gitignore', 'docs/credentials.md', 'src/aws/client.ts', 'keyboard.ts', 'src/env.ts', 'npmrc.md', 'docker/config.yaml', 'kube/deploy.yaml'];

describe('default secret globs', () => {
  it.each(CREDENTIAL_FILES)('%s is a secret', (relativePath) => {
    expect(matchingSecretGlob(relativePath, DEFAULT_SECRET_GLOBS)).toBeDefined();
  });

  it.each(ORDINARY)('%s is not', (relativePath) => {
    expect(matchingSecretGlob(relativePath, DEFAULT_SECRET_GLOBS)).toBeUndefined();
  });

  it('matches other spellings of the same file where the filesystem ignores case or Windows folds the name', () => {
    for (const variant of ['.NPMRC', '.Git-Credentials', '.AWS/config', 'ID_RSA', 'Cert.P12', '.Docker/Config.json', '.HuggingFace/stored_tokens', '.Kube/prod-config']) {
      expect(matchingSecretGlob(variant, DEFAULT_SECRET_GLOBS), variant).toBeUndefined();
      expect(matchingSecretGlob(variant, DEFAULT_SECRET_GLOBS, { caseInsensitive: true }), variant).toBeDefined();
      expect(secretPathMatcher(DEFAULT_SECRET_GLOBS, { caseInsensitive: true })(variant), variant).toBe(true);
    }
    for (const variant of ['.npmrc.', '.npmrc ', '.npmrc::$DATA', '.aws\\credentials', '.git-credentials:stream']) {
      expect(matchingSecretGlob(variant, DEFAULT_SECRET_GLOBS), variant).toBeDefined();
    }
  });

  it('always apply: a policy naming its own globs (or saved by an older version with the first five) still gets every default', () => {
    const legacy = PolicySchema.parse({ secretGlobs: ['.env*', '*.pem', '*.key', 'id_rsa*', '.ssh/**'] });
    expect(legacy.secretGlobs).toEqual(expect.arrayContaining([...DEFAULT_SECRET_GLOBS]));
    const own = PolicySchema.parse({ secretGlobs: ['*.secret'] });
    expect(own.secretGlobs).toEqual(expect.arrayContaining(['*.secret', '.npmrc', '.git-credentials']));
    expect(PolicySchema.parse({}).secretGlobs).toEqual([...DEFAULT_SECRET_GLOBS]);
    // Saving and loading again is stable: no duplicates pile up.
    expect(PolicySchema.parse(JSON.parse(JSON.stringify(own))).secretGlobs).toEqual(own.secretGlobs);
  });
});

describe('the Docker scratch copy, by the same patterns', () => {
  it('leaves the widened credential files out of the copy unless the step names them, and copies the rest', () => {
    const options = { ignore: ['.git/**', 'node_modules/**'], secretGlobs: PolicySchema.parse({}).secretGlobs };
    for (const file of ['.npmrc', '.git-credentials', '.aws/credentials', 'sub/.docker/config.json', '.kube/config', 'cert.p12']) {
      expect(exclusionOf(file, options), file).toBe('secret');
    }
    expect(exclusionOf('.npmrc', { ...options, allowedSecrets: ['.npmrc'] })).toBeNull();
    expect(exclusionOf('package.json', options)).toBeNull();
    expect(exclusionOf('src/index.ts', options)).toBeNull();
  });
});

describe('filesystemIgnoresCase', () => {
  it('is true on macOS and Windows whatever the root, and false for a case-sensitive root elsewhere', () => {
    expect(platformIgnoresCase('darwin')).toBe(true);
    expect(platformIgnoresCase('win32')).toBe(true);
    expect(platformIgnoresCase('linux')).toBe(false);
    expect(filesystemIgnoresCase('/nonexistent', 'darwin')).toBe(true);
    const root = tempDir();
    fs.writeFileSync(path.join(root, 'readme'), 'x');
    fs.writeFileSync(path.join(root, 'README'), 'another file');
    expect(filesystemIgnoresCase(root, 'linux')).toBe(false);
  });

  it("asks the root's own filesystem: a name found under its flipped case as the same file means case is ignored", () => {
    const root = tempDir();
    // On a case-sensitive disk a hard link stands in for what a case-insensitive one does by itself.
    fs.writeFileSync(path.join(root, 'notes'), 'x');
    fs.linkSync(path.join(root, 'notes'), path.join(root, 'NOTES'));
    expect(filesystemIgnoresCase(root, 'linux')).toBe(true);
    const missing = path.join(tempDir(), 'missing');
    expect(filesystemIgnoresCase(missing, 'linux')).toBe(false);
  });
});
