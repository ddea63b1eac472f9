/**
 * What a NATS failure means: refused by the server, no responders, a timeout, or the passing kind
 * a restarting server causes (worth a retry of an idempotent operation); and the secrets of the
 * connection options, blanked in every message. The client's and JetStream's own error classes
 * are used where they exist; the rest is read from the server's words.
 */
import { JetStreamApiError } from '@nats-io/jetstream';
import { RequestError, TimeoutError } from '@nats-io/transport-node';
import { A2AError } from '../../actors/errors.js';
import { errorText } from '../../machines/errorText.js';

export function reason(error: unknown): string {
  return errorText(error);
}

/** The secrets of the options (password, token, user info in URLs), to be blanked in messages. */
export function secretsOf(options: { servers: string | string[]; pass?: string; token?: string }): string[] {
  const fromUrls = (Array.isArray(options.servers) ? options.servers : [options.servers]).flatMap((s) => {
    const info = /\/\/([^@/]*)@/.exec(s)?.[1];
    return info ? [info, ...info.split(':')] : [];
  });
  return [options.pass, options.token, ...fromUrls].filter((x): x is string => typeof x === 'string' && x.length >= 3);
}

export function redact(text: string, secrets: string[]): string {
  return secrets.reduce((out, secret) => out.split(secret).join('***'), text);
}

export function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}

/** A request the server refused as invalid (overlapping subjects, a second unfiltered work-queue consumer, …). */
export function isRefused(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.status === 400;
}

export function isNoResponders(error: unknown): boolean {
  return error instanceof RequestError ? error.isNoResponders() : error instanceof Error && isNoResponders(error.cause);
}

export function isTimeout(error: unknown): boolean {
  return error instanceof TimeoutError || (error instanceof Error && error.cause instanceof TimeoutError);
}

/** A failure that a restarting server causes and that goes away: worth a retry of an idempotent operation. */
export function isTransient(error: unknown): boolean {
  if (error instanceof A2AError) return error.code === 'AGENT_TIMEOUT';
  const text = reason(error);
  const status = (error as { status?: unknown } | null)?.status;
  return isTimeout(error) || isNoResponders(error) || status === 503 || /not enabled|disconnect|connection (closed|lost|draining)|jetstream .*unavailable|\b503\b/i.test(text);
}
