/**
 * What an MCP server offers besides tools, as tools of its own that only read: its resources
 * (`mcp__<server>__list_resources`, `…__read_resource`) and its prompts (`…__list_prompts`,
 * `…__get_prompt`), given to a session when the server's capabilities say it has them; and the
 * text the model gets from a result (a tool's content, a resource's contents, a prompt's messages).
 */
import type { Client } from '@modelcontextprotocol/client';
import type { ToolOutcome } from '../../machines/ports.js';

/** What the model gets of a result at most (the rest is cut, and said). */
const MAX_RESULT_CHARS = 100_000;
/** Resources listed at most (a server may have thousands). */
const MAX_LISTED = 500;

export type ContextTool = 'list_resources' | 'read_resource' | 'list_prompts' | 'get_prompt';

export const CONTEXT_TOOLS: Record<ContextTool, { description: (server: string) => string; parameters: Record<string, unknown>; needs: 'resources' | 'prompts' }> = {
  list_resources: {
    needs: 'resources',
    description: (server) => `Lists the resources (documents, records, files) the MCP server "${server}" offers, with their URIs, and its URI templates. Read one with mcp__${server}__read_resource.`,
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
  read_resource: {
    needs: 'resources',
    description: (server) => `Reads one resource of the MCP server "${server}" by its URI (from mcp__${server}__list_resources, or a URI template filled in).`,
    parameters: { type: 'object', properties: { uri: { type: 'string', description: 'The resource\'s URI' } }, required: ['uri'], additionalProperties: false },
  },
  list_prompts: {
    needs: 'prompts',
    description: (server) => `Lists the prompts (instructions written by the server's authors) the MCP server "${server}" offers, with their arguments. Get one with mcp__${server}__get_prompt.`,
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
  get_prompt: {
    needs: 'prompts',
    description: (server) => `Gets one prompt of the MCP server "${server}" with its arguments filled in: its messages, as context for your work.`,
    parameters: {
      type: 'object',
      properties: { name: { type: 'string', description: 'The prompt\'s name' }, arguments: { type: 'object', additionalProperties: { type: 'string' }, description: 'Its arguments, by name' } },
      required: ['name'],
      additionalProperties: false,
    },
  },
};

type Options = { signal: AbortSignal; timeout: number; onprogress?: (p: { progress: number; total?: number; message?: string }) => void };

/** Runs one of the context tools; its arguments are checked here (the model wrote them). */
export async function runContextTool(client: Client, which: ContextTool, args: Record<string, unknown>, meta: Record<string, unknown>, options: Options): Promise<ToolOutcome> {
  const _meta = Object.keys(meta).length ? { _meta: meta } : {};
  switch (which) {
    case 'list_resources': {
      const [{ resources }, { resourceTemplates }] = await Promise.all([client.listResources(_meta, options), client.listResourceTemplates(_meta, options)]);
      const lines = resources.slice(0, MAX_LISTED).map((r) => `${r.uri} — ${r.title ?? r.name}${r.mimeType ? ` (${r.mimeType})` : ''}${r.description ? `: ${r.description}` : ''}`);
      if (resources.length > MAX_LISTED) lines.push(`[… ${resources.length - MAX_LISTED} more resources not listed]`);
      for (const t of resourceTemplates.slice(0, MAX_LISTED)) lines.push(`template ${t.uriTemplate} — ${t.title ?? t.name}${t.description ? `: ${t.description}` : ''}`);
      return { isError: false, content: lines.length ? lines.join('\n') : 'The server lists no resources.' };
    }
    case 'read_resource': {
      if (typeof args.uri !== 'string' || !args.uri) return { isError: true, content: 'read_resource needs "uri": the resource\'s URI (a string)' };
      const result = await client.readResource({ uri: args.uri, ..._meta }, options);
      const parts = result.contents.map((c) => ('text' in c && typeof c.text === 'string' ? c.text : `[${c.mimeType ?? 'binary'} content of ${c.uri}, ${'blob' in c && typeof c.blob === 'string' ? Math.floor((c.blob.length * 3) / 4) : 0} bytes, not shown]`));
      return cut(parts.join('\n'), false);
    }
    case 'list_prompts': {
      const { prompts } = await client.listPrompts(_meta, options);
      const lines = prompts.slice(0, MAX_LISTED).map((p) => `${p.name}(${(p.arguments ?? []).map((a) => `${a.name}${a.required ? '' : '?'}`).join(', ')})${p.description ? `: ${p.description}` : ''}`);
      return { isError: false, content: lines.length ? lines.join('\n') : 'The server lists no prompts.' };
    }
    case 'get_prompt': {
      if (typeof args.name !== 'string' || !args.name) return { isError: true, content: 'get_prompt needs "name": the prompt\'s name (a string)' };
      const given = args.arguments ?? {};
      if (typeof given !== 'object' || given === null || Array.isArray(given) || !Object.values(given).every((v) => typeof v === 'string')) {
        return { isError: true, content: 'get_prompt\'s "arguments" must be an object of strings' };
      }
      const result = await client.getPrompt({ name: args.name, arguments: given as Record<string, string>, ..._meta }, options);
      const parts = result.messages.map((m) => `${m.role}: ${contentText(m.content as ContentItem)}`);
      return cut([result.description ? `(${result.description})` : '', ...parts].filter(Boolean).join('\n\n'), false);
    }
  }
}

type ContentItem = { type: string; text?: string; mimeType?: string; resource?: { uri?: string; text?: string } };

function contentText(item: ContentItem): string {
  if (item.type === 'text') return item.text ?? '';
  if (item.type === 'resource') return item.resource?.text ?? `[resource ${item.resource?.uri ?? ''}]`;
  return `[${item.type}${item.mimeType ? ` ${item.mimeType}` : ''} content, not shown]`;
}

/** A tool's result as the model gets it: its text content, else its structured content as JSON. */
export function outcomeOf(result: { content?: unknown; structuredContent?: unknown; isError?: unknown }): ToolOutcome {
  const parts = ((result.content ?? []) as ContentItem[]).map(contentText);
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return cut(parts.join('\n'), result.isError === true);
}

function cut(content: string, isError: boolean): ToolOutcome {
  return { isError, content: content.length > MAX_RESULT_CHARS ? `${content.slice(0, MAX_RESULT_CHARS)}\n[… ${content.length - MAX_RESULT_CHARS} characters cut]` : content };
}
