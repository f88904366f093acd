import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../../src/domain/errors.js';
import { readTlsMaterial, resolveEngineAddress, tlsFailureOf } from '../../../../src/sandbox/docker/engine-address.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

function refusal(run: () => unknown): ExecutorError {
  try {
    run();
  } catch (error) {
    if (error instanceof ExecutorError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';

describe('the engine address, read as the docker CLI reads DOCKER_HOST and its TLS variables', () => {
  it('unset means the local default socket; unix:// and bare paths are sockets on this machine', () => {
    expect(resolveEngineAddress(undefined, {})).toMatchObject({
      transport: 'unix',
      security: 'local-socket',
      endpoint: 'unix:///var/run/docker.sock',
    });
    expect(resolveEngineAddress(undefined, { DOCKER_HOST: 'unix:///run/user/1000/podman/podman.sock' })).toMatchObject({
      transport: 'unix',
      socketPath: '/run/user/1000/podman/podman.sock',
      security: 'local-socket',
    });
    expect(resolveEngineAddress('/tmp/engine.sock', {})).toMatchObject({ socketPath: '/tmp/engine.sock', security: 'local-socket' });
    expect(resolveEngineAddress('npipe:////./pipe/docker_engine', {})).toMatchObject({
      transport: 'npipe',
      socketPath: '//./pipe/docker_engine',
    });
    expect(resolveEngineAddress('unix://run/docker.sock', {})).toMatchObject({ socketPath: 'run/docker.sock' });
  });

  it('tcp with DOCKER_TLS_VERIFY is TLS-verified with the cert folder (default ~/.docker, port 2376); any non-empty value verifies, as in the CLI', () => {
    expect(
      resolveEngineAddress(undefined, { DOCKER_HOST: 'tcp://build.example:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: '/certs' }),
    ).toMatchObject({
      transport: 'tcp',
      host: 'build.example',
      port: 2376,
      security: 'tls-verified',
      tlsVerify: true,
      certDir: '/certs',
    });
    expect(resolveEngineAddress(undefined, { DOCKER_HOST: 'build.example', DOCKER_TLS_VERIFY: '0' })).toMatchObject({
      endpoint: 'tcp://build.example:2376',
      port: 2376,
      security: 'tls-verified',
      certDir: path.join(os.homedir(), '.docker'),
    });
    expect(resolveEngineAddress(undefined, { DOCKER_HOST: 'tcp://[::1]:4000', DOCKER_TLS_VERIFY: '1' })).toMatchObject({
      host: '::1',
      port: 4000,
    });
  });

  it('plain tcp, and TLS without verification, are refused with ENGINE_INSECURE unless the person accepts the risk, and then carry a warning', () => {
    for (const env of [
      { DOCKER_HOST: 'tcp://10.0.0.5:2375' },
      { DOCKER_HOST: 'tcp://127.0.0.1:2376' },
      { DOCKER_HOST: 'http://10.0.0.5' },
    ]) {
      const error = refusal(() => resolveEngineAddress(undefined, env));
      expect(error.code).toBe('ENGINE_INSECURE');
      expect(error.details).toMatchObject({ reason: 'plain-tcp' });
      expect(error.message).toContain('controls the engine');
    }
    expect(refusal(() => resolveEngineAddress(undefined, { DOCKER_HOST: 'tcp://h:2376', DOCKER_TLS: '1' })).details).toMatchObject({
      reason: 'tls-not-verified',
    });
    expect(resolveEngineAddress(undefined, { DOCKER_HOST: 'tcp://h:2375', EXECUTOR_ALLOW_INSECURE_ENGINE: '1' })).toMatchObject({
      security: 'insecure',
      warning: expect.stringContaining('controls that machine as root'),
    });
    expect(resolveEngineAddress(undefined, { DOCKER_HOST: 'tcp://h', DOCKER_TLS: '1', EXECUTOR_ALLOW_INSECURE_ENGINE: '1' })).toMatchObject(
      {
        security: 'insecure',
        tlsVerify: false,
        port: 2376,
      },
    );
  });

  it('ssh:// takes user, host and port, needs an ssh-agent, and takes no path', () => {
    expect(resolveEngineAddress('ssh://deploy@build.example:2222', { SSH_AUTH_SOCK: '/tmp/agent' })).toMatchObject({
      transport: 'ssh',
      security: 'ssh',
      username: 'deploy',
      host: 'build.example',
      port: 2222,
    });
    expect(refusal(() => resolveEngineAddress('ssh://deploy@build.example', {})).details).toMatchObject({ reason: 'no-ssh-agent' });
    expect(refusal(() => resolveEngineAddress('ssh://deploy@build.example/var/run/docker.sock', { SSH_AUTH_SOCK: '/a' })).code).toBe(
      'ENGINE_CONFIG_INVALID',
    );
  });

  it('an address Executor cannot use is ENGINE_CONFIG_INVALID naming it', () => {
    for (const bad of ['fd://', 'ftp://x', 'tcp://', 'unix://', 'tcp://[zz', 'ssh://']) {
      const error = refusal(() => resolveEngineAddress(bad, { DOCKER_TLS_VERIFY: '1', SSH_AUTH_SOCK: '/a' }));
      expect(error.code, bad).toBe('ENGINE_CONFIG_INVALID');
    }
  });

  it('any DOCKER_HOST and TLS settings resolve or are refused with an ENGINE_ code; only verified TLS, SSH or a local socket is trusted without the opt-in', () => {
    const hostArb = fc.oneof(
      fc.string(),
      fc
        .constantFrom('tcp://', 'unix://', 'ssh://', 'npipe://', 'http://', 'https://', '')
        .chain((scheme) => fc.tuple(fc.constant(scheme), fc.string({ maxLength: 30 })).map(([s, rest]) => s + rest)),
    );
    const flag = fc.option(fc.constantFrom('', '0', '1', 'yes'), { nil: undefined });
    fc.assert(
      fc.property(hostArb, flag, flag, flag, (host, verify, tls, insecure) => {
        const env: NodeJS.ProcessEnv = {
          DOCKER_HOST: host,
          DOCKER_TLS_VERIFY: verify,
          DOCKER_TLS: tls,
          EXECUTOR_ALLOW_INSECURE_ENGINE: insecure,
          SSH_AUTH_SOCK: '/a',
        };
        let address;
        try {
          address = resolveEngineAddress(undefined, env);
        } catch (error) {
          expect(error).toBeInstanceOf(ExecutorError);
          expect(['ENGINE_CONFIG_INVALID', 'ENGINE_INSECURE']).toContain((error as ExecutorError).code);
          return;
        }
        if (address.security === 'insecure') expect(insecure).toBe('1');
        if (address.transport === 'tcp' && address.security === 'tls-verified') expect(verify ?? '').not.toBe('');
        if (address.transport === 'tcp') expect(address.security).not.toBe('local-socket');
      }),
      { numRuns: 500 },
    );
  });
});

describe('the TLS files of DOCKER_CERT_PATH', () => {
  it('reads ca.pem, cert.pem and key.pem; a missing or non-PEM file is named', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'ca.pem'), PEM_CERT);
    fs.writeFileSync(path.join(dir, 'cert.pem'), PEM_CERT);
    expect(refusal(() => readTlsMaterial(dir)).details).toMatchObject({ reason: 'cert-file-missing', file: path.join(dir, 'key.pem') });
    fs.writeFileSync(path.join(dir, 'key.pem'), 'not a key');
    expect(refusal(() => readTlsMaterial(dir)).details).toMatchObject({ reason: 'cert-file-not-pem', file: path.join(dir, 'key.pem') });
    fs.writeFileSync(path.join(dir, 'key.pem'), PEM_KEY);
    expect(readTlsMaterial(dir).key.toString()).toBe(PEM_KEY);
    fs.rmSync(path.join(dir, 'ca.pem'));
    fs.mkdirSync(path.join(dir, 'ca.pem'));
    expect(refusal(() => readTlsMaterial(dir)).details).toMatchObject({ reason: 'cert-file-unreadable' });
  });

  it('TLS failures are told apart by side: the engine not trusted, ours refused, or another handshake failure', () => {
    const coded = (code: string) => Object.assign(new Error(code), { code });
    expect(tlsFailureOf(coded('UNABLE_TO_VERIFY_LEAF_SIGNATURE'))).toBe('engine-certificate-untrusted');
    expect(tlsFailureOf(coded('ERR_TLS_CERT_ALTNAME_INVALID'))).toBe('engine-certificate-untrusted');
    expect(tlsFailureOf(coded('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE'))).toBe('client-certificate-refused');
    expect(tlsFailureOf(coded('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'))).toBe('client-certificate-refused');
    expect(tlsFailureOf(coded('ERR_SSL_WRONG_VERSION_NUMBER'))).toBe('handshake-failed');
    expect(tlsFailureOf(coded('ECONNREFUSED'))).toBeUndefined();
  });
});
