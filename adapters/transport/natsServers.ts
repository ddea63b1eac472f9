/**
 * What a process checks and prints about its NATS servers before it connects (replicas, the list
 * of URLs, URLs without their credentials): apart from nats.ts, so that reading a setting does not
 * load the NATS client.
 */
import { A2AError } from '../../actors/errors.js';

/** Checks a replicas setting: JetStream holds 1 to 5 replicas of a stream. */
export function assertReplicas(value: unknown, where: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 5) {
    throw new A2AError('CONFIGURATION_INVALID', `${where} must be an integer from 1 to 5 (JetStream's limit), got ${JSON.stringify(value)}`, { where });
  }
}

/** The server URLs of a list, or of one string separated by commas (`--nats a,b,c`). */
export function serverList(servers: string | string[]): string[] {
  return (Array.isArray(servers) ? servers : [servers]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
}

/** Server URLs without user info, for messages (each URL of a comma-separated cluster too). */
export function describeServers(servers: string | string[]): string {
  return serverList(servers).map((s) => s.replace(/\/\/[^@/]*@/, '//')).join(', ');
}
