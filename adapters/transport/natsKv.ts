/**
 * Key-value buckets over JetStream KV, for the NATS transport (history 1, file storage, created
 * if missing); and read-only access to a bucket for a user that may only read its stream (the
 * monitor's account, examples/nats/server.conf), through JetStream's stream API.
 */
import { JetStreamApiCodes, StorageType, type StreamInfo } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { KeyValue, KeyValueReader } from '../../machines/ports.js';
import { assertKey, assertName, assertPrefix } from './names.js';
import { decode, encode } from './natsCodec.js';
import { isApiError, isRefused, reason } from './natsErrors.js';
import type { NatsLink } from './natsLink.js';
import { peersJoining, replicasRefused } from './natsQueues.js';

/** The JetStream KV bucket of bucket `bucket`. */
export function bucketNameFor(bucket: string, namespace = 'default'): string {
  assertName(namespace, 'namespace');
  assertName(bucket, 'bucket name');
  return `a2a_${namespace}_${bucket}`;
}

const kvms = new WeakMap<NatsLink, Kvm>();

/** A prefix ending in "." is a subject prefix the server can filter on; others are filtered here. */
const serverFilter = (prefix: string) => (prefix.endsWith('.') && prefix.length > 1 ? prefix : '');

/**
 * The keys of a bucket under `prefix`, from its stream's info (the subjects it holds, filtered by
 * the server), sorted. No consumer is made: a KV key listing (`kv.keys()`) creates an ordered
 * consumer that lingers on the server for minutes after it is read (hosts listing on every
 * heartbeat left about 150 each per bucket). Each listed key is read once: a subject whose last
 * message is a delete marker (an older version's deletes, or another tool's) is no key; this
 * adapter's own deletes leave none.
 */
async function listKeys(link: NatsLink, bucket: string, name: string, prefix: string, isKey: (key: string) => Promise<boolean>): Promise<string[]> {
  const subjectPrefix = `$KV.${name}.`;
  try {
    return await link.retrying(`list the keys of bucket ${bucket}`, bucket, async () => {
      let i: StreamInfo;
      try {
        i = await link.jsm.streams.info(`KV_${name}`, { subjects_filter: `${subjectPrefix}${serverFilter(prefix)}>` });
      } catch (error) {
        if (isApiError(error, JetStreamApiCodes.StreamNotFound)) return [];
        throw error;
      }
      const listed = Object.keys(i.state.subjects ?? {})
        .map((subject) => subject.slice(subjectPrefix.length))
        .filter((key) => key.startsWith(prefix));
      // a marker is the only message of its subject once its value is gone (history 1), so the
      // counts cannot tell it from a value: each key is read (in parallel) to know
      const live = await Promise.all(listed.map(async (key) => ((await isKey(key)) ? key : null)));
      return live.filter((key): key is string => key !== null).sort();
    });
  } catch (error) {
    throw link.fail('AGENT_ERROR', `could not list the keys of bucket ${bucket}`, bucket, error);
  }
}

/** Opens bucket `bucket`, creating it if missing. */
export async function openKeyValue(link: NatsLink, bucket: string): Promise<KeyValue> {
  const name = bucketNameFor(bucket, link.namespace);
  let kvm = kvms.get(link);
  if (!kvm) kvms.set(link, (kvm = new Kvm(link.js)));
  let kv: KV;
  await link.ready(`open the KV bucket ${bucket}`, bucket);
  const replicas = link.replicas(bucket);
  for (let attempt = 0; ; attempt++) {
    try {
      // several processes of a cluster creating the same bucket at once wait past the API's timeout (see ensureQueue)
      kv = await link.retrying(`open the KV bucket ${bucket}`, bucket, () => kvm.create(name, { history: 1, storage: StorageType.File, replicas }));
      break;
    } catch (error) {
      if (await peersJoining(link, error, replicas, attempt)) continue;
      if (isApiError(error, 10005) || isApiError(error, 10074)) throw replicasRefused(link, `the KV bucket ${bucket} (${name})`, bucket, error);
      throw link.fail('AGENT_ERROR', `could not open or create the KV bucket ${bucket} (${name})`, bucket, error);
    }
  }
  // an existing bucket keeps its replicas (see ensureQueue): told, not changed
  try {
    const held = (await kv.status()).replicas;
    if (link.replicasAsked && held !== replicas) link.warn(`the KV bucket ${bucket} (${name}) has ${held} replica(s), and this connection asks for ${replicas}: it keeps ${held} (change it with \`nats stream edit KV_${name} --replicas ${replicas}\`)`);
  } catch {
    // its status is only for this warning
  }
  const at = (key: string) => `${bucket}/${key}`;
  const failed = (op: string, key: string, error: unknown) => link.fail('AGENT_ERROR', `KV ${op} of key "${key}" in bucket ${bucket} failed`, at(key), error);
  const isConflict = (error: unknown) =>
    isApiError(error, JetStreamApiCodes.StreamWrongLastSequence) || isApiError(error, JetStreamApiCodes.StreamWrongLastSequenceUnknown) || /wrong last sequence|key exists/i.test(reason(error));

  /** The key's last value as its stream's leader has it (null when missing or deleted). */
  const latest = async (key: string): Promise<{ payload: string; revision: number } | null> => {
    // null when the key has no message; a delete or purge marker is a message with KV-Operation
    const m = await link.jsm.streams.getMessage(`KV_${name}`, { last_by_subj: `$KV.${name}.${key}` });
    return !m || m.header?.get('KV-Operation') ? null : { payload: new TextDecoder().decode(m.data), revision: m.seq };
  };

  /** A compare-and-set write, retried across a restart; null when it lost to another writer. */
  const update = async (key: string, payload: string, revision: number): Promise<number | null> => {
    let attempts = 0;
    let lost = false;
    let written: number | null = null;
    await link.retrying(`write key "${key}" of bucket ${bucket}`, at(key), async () => {
      attempts += 1;
      try {
        written = revision === 0 ? await kv.create(key, payload) : await kv.update(key, payload, revision);
      } catch (error) {
        // lost the compare-and-set: an answer, never retried
        if (!isConflict(error)) throw error;
        lost = true;
      }
    });
    if (!lost) return written;
    if (attempts === 1) return null;
    // A retry after a lost reply: the first attempt may have been the write that moved the
    // revision. Not knowing is an error (the caller retries), not a lost compare-and-set. Read
    // from the stream's leader: a KV get may be answered by any replica (direct get), and one
    // still catching up would show the value before the write, taken for another writer's win.
    const now = await link.retrying(`read key "${key}" of bucket ${bucket}`, at(key), () => latest(key));
    return now !== null && now.payload === payload ? now.revision : null;
  };
  let purgeAllowed = true;
  /** Whether a listed key's last message is a value (a marker left by a KV delete is not). */
  const latestIsKey = async (key: string) => (await kv.get(key))?.operation === 'PUT';

  return {
    get: async (key) => {
      assertKey(key, bucket);
      try {
        const entry = await link.retrying(`use key "${key}" of bucket ${bucket}`, at(key), () => kv.get(key));
        return entry && entry.operation === 'PUT' ? { value: decode(entry.value), revision: entry.revision } : null;
      } catch (error) {
        throw failed('get', key, error);
      }
    },
    put: async (key, value) => {
      assertKey(key, bucket);
      const payload = encode(value, `key "${key}" of bucket ${bucket}`);
      try {
        // a blind write: writing it twice leaves the same value
        return await link.retrying(`write key "${key}" of bucket ${bucket}`, at(key), () => kv.put(key, payload));
      } catch (error) {
        throw failed('put', key, error);
      }
    },
    update: async (key, value, revision) => {
      assertKey(key, bucket);
      const payload = encode(value, `key "${key}" of bucket ${bucket}`);
      try {
        return await update(key, payload, revision);
      } catch (error) {
        throw failed('update', key, error);
      }
    },
    delete: async (key) => {
      assertKey(key, bucket);
      try {
        // the key's messages purged from the bucket's stream: nothing is left of it, where a KV
        // delete leaves a marker per key for ever (a bucket of finished sessions would grow by one
        // per session ever run). Kept as a KV delete where the user may not purge (a marker, still
        // no key to a reader).
        await link.retrying(`use key "${key}" of bucket ${bucket}`, at(key), async () => {
          if (purgeAllowed) {
            try {
              await link.jsm.streams.purge(`KV_${name}`, { filter: `$KV.${name}.${key}` });
              return;
            } catch (error) {
              // not allowed to this user (its permissions, or a stream that denies purges)
              if (!isRefused(error) && !/permission/i.test(reason(error))) throw error;
              purgeAllowed = false;
            }
          }
          await kv.delete(key);
        });
      } catch (error) {
        throw failed('delete', key, error);
      }
    },
    deleteUnder: async (prefix) => {
      assertPrefix(prefix, bucket);
      try {
        await link.retrying(`remove the keys under "${prefix}" of bucket ${bucket}`, at(prefix), async () => {
          if (purgeAllowed) {
            try {
              await link.jsm.streams.purge(`KV_${name}`, { filter: `$KV.${name}.${prefix}>` });
              return;
            } catch (error) {
              if (!isRefused(error) && !/permission/i.test(reason(error))) throw error;
              purgeAllowed = false;
            }
          }
          for (const key of await listKeys(link, bucket, name, prefix, latestIsKey)) await kv.delete(key);
        });
      } catch (error) {
        throw failed('delete', `${prefix}*`, error);
      }
    },
    keys: (prefix = '') => listKeys(link, bucket, name, prefix, latestIsKey),
  };
}

/** Reads bucket `bucket` through the stream API only (no bucket created, nothing written). */
export function openKeyValueReader(link: NatsLink, bucket: string): KeyValueReader {
  const name = bucketNameFor(bucket, link.namespace);
  // what @nats-io/kv names them: stream KV_<bucket>, a key's subject $KV.<bucket>.<key>
  const stream = `KV_${name}`;
  const subjectPrefix = `$KV.${name}.`;
  /** The stream's info, with the subjects under `filter` listed; null when there is no bucket. */
  const info = async (filter?: string): Promise<StreamInfo | null> => {
    try {
      return await link.jsm.streams.info(stream, filter === undefined ? undefined : { subjects_filter: filter });
    } catch (error) {
      if (isApiError(error, JetStreamApiCodes.StreamNotFound)) return null;
      throw error;
    }
  };
  // Direct get when the bucket allows it (any server in a cluster answers), else message get;
  // learnt from the stream's config on first use.
  let direct: boolean | null = null;
  const get = async (key: string) => {
    if (direct === null) {
      const i = await info();
      if (!i) return null;
      direct = i.config.allow_direct === true;
    }
    const query = { last_by_subj: `${subjectPrefix}${key}` };
    const m = direct ? await link.jsm.direct.getMessage(stream, query) : await link.jsm.streams.getMessage(stream, query);
    // a deleted or purged key keeps a marker as its last entry
    const operation = m?.header?.get('KV-Operation');
    return m && operation !== 'DEL' && operation !== 'PURGE' ? { value: decode(m.data), revision: m.seq } : null;
  };
  return {
    get: async (key) => {
      assertKey(key, bucket);
      try {
        return await link.retrying(`read key "${key}" of bucket ${bucket}`, `${bucket}/${key}`, () => get(key));
      } catch (error) {
        throw link.fail('AGENT_ERROR', `KV get of key "${key}" in bucket ${bucket} failed`, `${bucket}/${key}`, error);
      }
    },
    keys: (prefix = '') => listKeys(link, bucket, name, prefix, async (key) => (await get(key)) !== null),
  };
}
