import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPullRequest } from '../../adapters/github.js';
import { isA2AError } from '../../actors/errors.js';

const TOKEN = 'ghp_testTokenThatMustNeverLeak123';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A local stand-in for the GitHub API: answers each request with the next scripted reply. */
let server: Server;
let apiUrl: string;
let seen: Seen[] = [];
let reply: { status: number; body: unknown; headers?: Record<string, string> } = { status: 201, body: {} };
/** Replies taken in order before `reply` (a conversation of several requests). */
let queued: Array<typeof reply> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: raw ? JSON.parse(raw) : null });
      const next = queued.shift() ?? reply;
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(typeof next.body === 'string' ? next.body : JSON.stringify(next.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen = [];
});

const options = () => ({ apiUrl, token: TOKEN, owner: 'acme', repo: 'widgets', head: 'a2a/t1', base: 'main', title: 'Add widgets', body: 'Done by a2a.' });

describe('GitHub adapter', () => {
  it('should POST the pull request with the API headers, and answer its number and URL', async () => {
    reply = { status: 201, body: { number: 42, html_url: 'https://github.com/acme/widgets/pull/42', url: 'https://api.github.com/x' } };
    expect(await createPullRequest(options())).toEqual({ number: 42, url: 'https://github.com/acme/widgets/pull/42' });
    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request!.method).toBe('POST');
    expect(request!.url).toBe('/api/v3/repos/acme/widgets/pulls');
    expect(request!.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      'content-type': 'application/json',
    });
    expect(request!.body).toEqual({ title: 'Add widgets', head: 'a2a/t1', base: 'main', body: 'Done by a2a.' });
  });

  it("should fail on a 422 with GitHub's message and details, and never the token", async () => {
    reply = {
      status: 422,
      body: {
        message: 'Validation Failed',
        errors: [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for acme:a2a/t1 (token ${TOKEN}).` }],
        documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
      },
    };
    const error = await createPullRequest(options()).catch((e: unknown) => e);
    expect(isA2AError(error, 'VALIDATION_ERROR')).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('HTTP 422');
    expect(message).toContain('Validation Failed: A pull request already exists for acme:a2a/t1');
    expect(message).not.toContain(TOKEN);
    expect(JSON.stringify(error)).not.toContain(TOKEN);
    expect(String((error as Error).stack)).not.toContain(TOKEN);
  });

  it('should take the open pull request of the branch when GitHub says one already exists (opened before a restart)', async () => {
    const exists = { status: 422, body: { message: 'Validation Failed', errors: [{ resource: 'PullRequest', code: 'custom', message: 'A pull request already exists for acme:a2a/t1.' }] } };
    const listed = { status: 200, body: [{ number: 7, html_url: 'https://github.com/acme/widgets/pull/7' }] };
    queued = [exists, listed];
    expect(await createPullRequest(options())).toEqual({ number: 7, url: 'https://github.com/acme/widgets/pull/7' });
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /api/v3/repos/acme/widgets/pulls', 'GET /api/v3/repos/acme/widgets/pulls?head=acme%3Aa2a%2Ft1&base=main&state=open']);
    expect(seen[1]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('should map other refusals to their meaning', async () => {
    reply = { status: 401, body: { message: 'Bad credentials' } };
    await expect(createPullRequest(options())).rejects.toMatchObject({
      code: 'CONFIGURATION_INVALID',
      message: expect.stringMatching(/HTTP 401\): Bad credentials\. Check the GitHub token\.$/),
    });
    reply = { status: 403, body: { message: 'API rate limit exceeded' }, headers: { 'x-ratelimit-remaining': '0' } };
    await expect(createPullRequest(options())).rejects.toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
    reply = { status: 404, body: { message: 'Not Found' } };
    await expect(createPullRequest(options())).rejects.toMatchObject({ code: 'NOT_FOUND' });
    reply = { status: 502, body: '<html>bad gateway</html>' };
    await expect(createPullRequest(options())).rejects.toMatchObject({ code: 'AGENT_ERROR', message: expect.stringContaining('HTTP 502') });
  });

  it('should say when GitHub cannot be reached, without the token', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const error = await createPullRequest({ ...options(), apiUrl: `http://127.0.0.1:${port}` }).catch((e: unknown) => e);
    expect(isA2AError(error, 'AGENT_ERROR')).toBe(true);
    expect((error as Error).message).toMatch(/^Could not reach GitHub at http:\/\/127\.0\.0\.1:\d+ to open a pull request in acme\/widgets: /);
    expect((error as Error).message).not.toContain(TOKEN);
  });
});
