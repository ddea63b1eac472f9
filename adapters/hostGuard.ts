/**
 * The Host and Origin checks of a2a's local HTTP servers (the studio, `a2a mcp --http`): a web
 * page the user happens to open must not reach them. A page that rebinds its own domain name to
 * 127.0.0.1 (DNS rebinding) still sends its own name as Host; a page on another site that posts
 * to the server sends its own Origin. Programs send no Origin, and the Host they dialled.
 */
import { hostname } from 'node:os';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Whether `host` is a loopback address or name (where only this machine's programs reach a server). */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host.replace(/^\[|\]$/g, ''));
}

/**
 * Whether a request's Host header names the server listening on `host`:`port`: the port must be
 * its own, the name the one it listens on, this machine's name, or (bound to loopback) any loopback
 * name. Bound to every interface, any name passes (the token is then the only protection).
 */
export function hostNamesServer(value: string | undefined, host: string, port: number): boolean {
  if (!value) return false;
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(value);
  if (!m) return false;
  const name = m[1]!.replace(/^\[|\]$/g, '');
  if (m[2] && Number(m[2]) !== port) return false;
  if (host === '0.0.0.0' || host === '::') return true;
  return name === host || name === hostname() || (LOOPBACK.has(name) && LOOPBACK.has(host));
}

/** Whether a request comes from the server's own page (`Origin: http://<its Host>`) or from a program (no Origin). */
export function ownOrigin(origin: string | undefined, hostHeader: string | undefined): boolean {
  return origin === undefined || origin === `http://${hostHeader}`;
}
