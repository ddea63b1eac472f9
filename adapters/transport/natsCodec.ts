/**
 * Payloads and headers over NATS: JSON in (secrets redacted), JSON or text out; header names as
 * NATS takes them, JetStream's own (`Nats-…`) reserved and hidden from handlers.
 */
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { A2AError } from '../../actors/errors.js';
import { stateJson } from '../../actors/config/secrets.js';
import { reason } from './natsErrors.js';

/** Headers JetStream uses itself (`Nats-Msg-Id`, `Nats-Expected-…`): reserved, hidden from handlers. */
const RESERVED_HEADER = /^nats-/i;

/**
 * The JSON of a payload; known secret values are redacted (actors/config/secrets.ts): nothing leaves in
 * clear over NATS. (Payloads are state read back elsewhere: credential shapes are left alone; the
 * events people read are redacted as records before they are published.)
 */
export function encode(data: unknown, what: string): string {
  try {
    return stateJson(data === undefined ? null : data);
  } catch (error) {
    throw new A2AError('VALIDATION_ERROR', `data for ${what} is not JSON-serializable: ${reason(error)}`, { cause: error, where: what });
  }
}

/** JSON payloads; a payload that is not JSON (a foreign publisher) is handed over as its text. */
export function decode(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return null;
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function toHeaders(headers: Record<string, string> | undefined, subject: string): MsgHdrs | undefined {
  const entries = Object.entries(headers ?? {});
  if (entries.length === 0) return undefined;
  const h = natsHeaders();
  for (const [key, value] of entries) {
    if (typeof value !== 'string' || !/^[!-9;-~]+$/.test(key) || RESERVED_HEADER.test(key)) {
      throw new A2AError('VALIDATION_ERROR', `invalid header "${key}" for subject "${subject}": names are printable ASCII without ":", not starting with "Nats-"; values strings`, {
        where: subject,
      });
    }
    h.set(key, value);
  }
  return h;
}

export function fromHeaders(headers: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const key of headers.keys()) if (!RESERVED_HEADER.test(key)) out[key] = headers.get(key);
  return out;
}
