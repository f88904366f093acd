import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { noteOwnProcess } from './own-processes.js';
import { killAfter } from './teardown.js';
import { tempDir } from './temp-dirs.js';

/*
 * The real Gemini CLI (`@google/gemini-cli`) run headless, `gemini -p … --yolo`, against a scripted
 * Gemini model on loopback: a remote model cannot run here, so the model's turns are scripted, in
 * the Gemini API's real streaming wire format (`POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`,
 * Server-Sent Events each carrying a GenerateContentResponse). Everything else is real: the client,
 * its hooks, Executor's hook command and the host it talks to.
 */

export const GEMINI = path.resolve(import.meta.dirname, '../../node_modules/.bin/gemini');

interface GeminiPart {
  text?: string;
  functionCall?: { name: string; args: Record<string, unknown> };
  functionResponse?: { id?: string; name: string; response: Record<string, unknown> };
}
interface GeminiRequest {
  path: string;
  body: { contents?: Array<{ role?: string; parts?: GeminiPart[] }>; tools?: unknown[] } | undefined;
}

export interface ScriptedGemini {
  baseUrl: string;
  requests: GeminiRequest[];
  close(): Promise<void>;
}

/**
 * A scripted Gemini model that asks for `calls` in turn (one per main-loop request, the ones that
 * offer tools), then ends with text. Side requests (no tools: JSON checks, countTokens) get a plain answer.
 */
export async function startScriptedGemini(calls: Array<{ name: string; args: Record<string, unknown> }>): Promise<ScriptedGemini> {
  const requests: GeminiRequest[] = [];
  let next = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: GeminiRequest['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as GeminiRequest['body'];
      } catch {
        body = undefined;
      }
      const url = req.url ?? '';
      requests.push({ path: url, body });
      const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
      if (url.includes(':countTokens')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ totalTokens: 10 }));
        return;
      }
      const reply = (part: GeminiPart) => ({
        candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
        usageMetadata,
      });
      const call = body?.tools?.length ? calls[next++] : undefined;
      const answer = reply(call ? { functionCall: call } : { text: body?.tools?.length ? 'All done.' : '{}' });
      if (!url.includes(':streamGenerateContent')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify(answer)}\r\n\r\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The function responses Gemini CLI sent back to the model, in order: what the model read of each tool call. */
export function functionResponses(server: ScriptedGemini): Array<{ name: string; text: string }> {
  const results: Array<{ name: string; text: string }> = [];
  const seen = new Set<string>();
  for (const request of server.requests) {
    for (const content of request.body?.contents ?? []) {
      for (const part of content.parts ?? []) {
        const response = part.functionResponse;
        if (!response) continue;
        const key = response.id ?? `${response.name}-${results.length}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const value = response.response;
        results.push({
          name: response.name,
          text: typeof value.output === 'string' ? value.output : typeof value.error === 'string' ? value.error : JSON.stringify(value),
        });
      }
    }
  }
  return results;
}

/** Runs `gemini -p … --yolo` in `cwd` with a temporary HOME set up for an API key; resolves with its exit code and output. */
export async function runGemini(cwd: string, server: ScriptedGemini): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const home = tempDir('executor-gemini-home-');
  fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
  fs.writeFileSync(
    path.join(home, '.gemini', 'settings.json'),
    JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } } }),
  );
  const child = spawn(process.execPath, [GEMINI, '-p', 'Do the task.', '-m', 'gemini-2.5-flash', '--yolo'], {
    cwd,
    env: {
      ...process.env,
      HOME: home,
      GOOGLE_GEMINI_BASE_URL: server.baseUrl,
      GEMINI_API_KEY: 'scripted-model-key',
      GEMINI_TELEMETRY_ENABLED: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killAfter(child);
  noteOwnProcess(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  return { code, stdout, stderr };
}
