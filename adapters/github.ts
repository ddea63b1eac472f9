/**
 * Pull requests through GitHub's REST API with the global fetch. Errors carry GitHub's own
 * explanation and the HTTP status, and never the token (it is scrubbed from anything echoed).
 */
import type { ErrorCode } from '../machines/protocol/index.js';
import { A2AError } from '../actors/errors.js';

export interface PullRequestOptions {
  /** GitHub Enterprise: `https://host/api/v3`. */
  apiUrl?: string;
  token: string;
  owner: string;
  repo: string;
  /** The branch with the changes (`owner:branch` for a fork). */
  head: string;
  /** The branch to merge into. */
  base: string;
  title: string;
  body: string;
  signal?: AbortSignal;
}

export interface PullRequest {
  number: number;
  url: string;
}

interface GitHubError {
  message?: string;
  errors?: Array<{ message?: string; resource?: string; field?: string; code?: string } | string>;
  documentation_url?: string;
}

function codeFor(status: number, rateLimited: boolean): ErrorCode {
  if (status === 429 || rateLimited) return 'RATE_LIMIT_EXCEEDED';
  if (status === 401 || status === 403) return 'CONFIGURATION_INVALID';
  if (status === 404) return 'NOT_FOUND';
  if (status === 422 || status === 400) return 'VALIDATION_ERROR';
  return 'AGENT_ERROR';
}

const HINTS: Record<number, string> = {
  401: ' Check the GitHub token.',
  403: ' Check that the token may create pull requests in this repository.',
  404: ' Check owner and repo, and that the token can see the repository.',
};

/** GitHub's `message` and the details of its `errors` list, as one line. */
function describe(body: GitHubError | null, fallback: string): string {
  const details = (body?.errors ?? [])
    .map((e) => (typeof e === 'string' ? e : (e.message ?? [e.resource, e.field, e.code].filter(Boolean).join(' '))))
    .filter(Boolean);
  const message = body?.message || fallback;
  return details.length > 0 ? `${message}: ${details.join('; ')}` : message;
}

export async function createPullRequest(options: PullRequestOptions): Promise<PullRequest> {
  const { token } = options;
  const scrub = (text: string) => (token ? text.split(token).join('***') : text);
  const apiUrl = (options.apiUrl ?? 'https://api.github.com').replace(/\/+$/, '');
  const url = `${apiUrl}/repos/${encodeURIComponent(options.owner)}/${encodeURIComponent(options.repo)}/pulls`;
  const where = `${options.owner}/${options.repo}`;

  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: 'application/vnd.github+json',
        'X-GitHub-Api-Version': '2022-11-28',
        'Content-Type': 'application/json',
        'User-Agent': 'a2a',
      },
      body: JSON.stringify({ title: options.title, head: options.head, base: options.base, body: options.body }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    // No cause attached: a fetch error may hold the request, and with it the token.
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new A2AError('AGENT_ERROR', scrub(`Could not reach GitHub at ${apiUrl} to open a pull request in ${where}: ${reason}`));
  }

  const text = await response.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: described by status below
  }
  if (!response.ok) {
    const rateLimited = response.status === 403 && response.headers.get('x-ratelimit-remaining') === '0';
    const message = describe(json as GitHubError | null, response.statusText || 'no explanation');
    // opened already (by this task before its process stopped, or by hand): that pull request, not a failure
    if (response.status === 422 && /already exists/i.test(message)) {
      const existing = await openPullRequest(options, url).catch(() => null);
      if (existing) return existing;
    }
    throw new A2AError(
      codeFor(response.status, rateLimited),
      scrub(`GitHub refused to open a pull request from ${options.head} into ${options.base} in ${where} (HTTP ${response.status}): ${message}.${HINTS[response.status] ?? ''}`),
    );
  }
  const pr = json as { number?: unknown; html_url?: unknown } | null;
  if (typeof pr?.number !== 'number' || typeof pr.html_url !== 'string') {
    throw new A2AError('AGENT_ERROR', `GitHub answered HTTP ${response.status} without a pull request number and URL.`);
  }
  return { number: pr.number, url: pr.html_url };
}

/** The open pull request from `head` into `base`, if there is one (GET …/pulls?head=owner:branch&base=…). */
async function openPullRequest(options: PullRequestOptions, url: string): Promise<PullRequest | null> {
  const query = new URLSearchParams({ head: `${options.owner}:${options.head}`, base: options.base, state: 'open' });
  const response = await fetch(`${url}?${query.toString()}`, {
    headers: { Authorization: `Bearer ${options.token}`, Accept: 'application/vnd.github+json', 'X-GitHub-Api-Version': '2022-11-28', 'User-Agent': 'a2a' },
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (!response.ok) return null;
  const list = (await response.json().catch(() => null)) as Array<{ number?: unknown; html_url?: unknown }> | null;
  const pr = Array.isArray(list) ? list.find((p) => typeof p.number === 'number' && typeof p.html_url === 'string') : undefined;
  return pr ? { number: pr.number as number, url: pr.html_url as string } : null;
}
