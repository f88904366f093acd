import { z } from 'zod';
import { PROTOCOL_VERSION } from './protocol.js';

/*
 * The envelopes of protocol.ts as zod schemas: what the server checks every message against.
 * The clients check replies and events by hand (envelope-checks.ts, kept equal to these by
 * test/unit/ipc/envelope-checks.property.test.ts), so a client loads no zod to talk to a host.
 */

const idField = z.string().min(1).max(128);

export const RequestEnvelopeSchema = z.strictObject({
  v: z.literal(PROTOCOL_VERSION),
  kid: z.string().min(1).max(128),
  id: idField,
  ts: z.number().int().nonnegative(),
  nonce: z.string().min(16).max(128),
  method: z.string().min(1).max(128),
  params: z.unknown(),
  sig: z.string().min(1).max(256),
});

const ErrorShapeSchema = z.strictObject({
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
});

export const ResponseEnvelopeSchema = z.union([
  z.strictObject({ v: z.literal(PROTOCOL_VERSION), id: idField.nullable(), ok: z.literal(true), result: z.unknown(), sig: z.string() }),
  z.strictObject({
    v: z.literal(PROTOCOL_VERSION),
    id: idField.nullable(),
    ok: z.literal(false),
    error: ErrorShapeSchema,
    sig: z.string(),
  }),
]);

export const EventEnvelopeSchema = z.strictObject({
  v: z.literal(PROTOCOL_VERSION),
  topic: z.string(),
  seq: z.number().int().nonnegative(),
  data: z.unknown(),
  sig: z.string(),
});

/**
 * The unauthenticated key exchange that opens a session. The secret never travels: both sides
 * derive the session key as HMAC(secret, "executor-session\n" + clientNonce + "\n" + serverNonce),
 * and the first signed request proves the client holds the secret.
 */
export const HelloSchema = z.strictObject({
  v: z.literal(PROTOCOL_VERSION),
  hello: z.strictObject({
    /** Which credential the client holds: "cli" and "agent" (token files), "web" (the one-time URL token), "window". */
    credential: z.string().min(1).max(64),
    clientNonce: z.string().min(16).max(128),
    /** Free text for the audit trail, e.g. an MCP client's name and version. */
    client: z.string().max(200).optional(),
    /** With proof: the client's clock, so a proof cannot be kept and used later. */
    ts: z.number().int().nonnegative().optional(),
    /** base64url(HMAC(secret, helloProofInput(credential, clientNonce, ts))): the hello proves the secret up front. */
    proof: z.string().min(1).max(128).optional(),
  }),
});

export const HelloReplySchema = z.union([
  z.strictObject({
    v: z.literal(PROTOCOL_VERSION),
    welcome: z.strictObject({ kid: z.string(), serverNonce: z.string(), channel: z.string(), methods: z.array(z.string()) }),
  }),
  z.strictObject({ v: z.literal(PROTOCOL_VERSION), id: z.null(), ok: z.literal(false), error: ErrorShapeSchema, sig: z.string() }),
]);
