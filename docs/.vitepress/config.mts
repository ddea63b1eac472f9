/**
 * The documentation site (VitePress). `npm run docs:build` first writes the pages generated from
 * the code (test/docs/generate.ts: the references, the API pages under reference/api/, the Mermaid
 * bundle under public/mermaid/), then builds; nothing is fetched from the network (the search is
 * VitePress's local index, the fonts are bundled).
 *
 * Self-contained on purpose (it imports nothing of the project's code): the site test builds a
 * copy of docs/ in a temporary directory with this same config.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig, type DefaultTheme } from 'vitepress';
import { slugify } from './slug.js';

const here = import.meta.dirname;

/** The API reference's pages (TypeDoc's, written before the build), by kind. */
function apiSidebar(): DefaultTheme.SidebarItem[] {
  const root = join(here, '..', 'reference', 'api');
  const kinds: Array<[string, string]> = [
    ['functions', 'Functions'],
    ['classes', 'Classes'],
    ['interfaces', 'Interfaces'],
    ['type-aliases', 'Types'],
  ];
  const items: DefaultTheme.SidebarItem[] = [{ text: 'Index', link: '/reference/api/' }];
  for (const [dir, text] of kinds) {
    const path = join(root, dir);
    if (!existsSync(path)) continue;
    const pages = readdirSync(path).filter((f) => f.endsWith('.md')).sort();
    items.push({ text, collapsed: true, items: pages.map((f) => ({ text: f.replace(/\.md$/, ''), link: `/reference/api/${dir}/${f.replace(/\.md$/, '')}` })) });
  }
  return items;
}

const guide: DefaultTheme.SidebarItem[] = [
  {
    text: 'Guide',
    items: [
      { text: 'First run', link: '/guide/first-run' },
      { text: 'Charts and actors', link: '/guide/charts-and-actors' },
      { text: 'Sessions', link: '/guide/sessions' },
      { text: 'Permissions and people', link: '/guide/permissions' },
      { text: 'Durability', link: '/guide/durability' },
      { text: 'Cost', link: '/guide/cost' },
      { text: 'Use it from code', link: '/guide/library' },
    ],
  },
];

const howTo: DefaultTheme.SidebarItem[] = [
  {
    text: 'How-to',
    items: [
      { text: 'Real models', link: '/how-to/real-models' },
      { text: 'Git and pull requests', link: '/how-to/git' },
      { text: 'The organiser', link: '/how-to/organiser' },
      { text: 'Hosts and a NATS cluster', link: '/how-to/cluster' },
      { text: 'External agents', link: '/how-to/external-agents' },
      { text: 'Studio', link: '/how-to/studio' },
      { text: 'MCP', link: '/how-to/mcp' },
      { text: 'A2A', link: '/how-to/a2a' },
      { text: 'Traces', link: '/how-to/traces' },
      { text: 'The Stately inspector', link: '/how-to/inspector' },
      { text: 'Security', link: '/how-to/security' },
    ],
  },
];

const reference: DefaultTheme.SidebarItem[] = [
  {
    text: 'Reference',
    items: [
      { text: 'CLI', link: '/reference/cli' },
      { text: 'Configuration', link: '/reference/configuration' },
      { text: 'Run events', link: '/reference/events' },
      { text: 'Tools', link: '/reference/tools' },
      { text: 'Permission actions', link: '/reference/permissions' },
      { text: 'Error codes', link: '/reference/errors' },
      { text: 'The machines', link: '/reference/machines' },
      { text: 'Benchmarks', link: '/reference/benchmarks' },
      { text: 'Dependencies', link: '/reference/dependencies' },
      { text: 'Development', link: '/reference/development' },
    ],
  },
  { text: 'API (from index.ts)', collapsed: true, items: apiSidebar() },
];

export default defineConfig({
  title: 'a2a',
  description: 'An actor runtime for teams of LLM agents: an orchestrator, workers and sub-tasks as XState actors.',
  lang: 'en',
  head: [['link', { rel: 'icon', type: 'image/svg+xml', href: '/favicon.svg' }]],
  // anchors as GitHub makes them, so that links work in both places (slug.ts)
  markdown: { anchor: { slugify }, headers: { slugify } } as Record<string, unknown>,
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/first-run', activeMatch: '/guide/' },
      { text: 'How-to', link: '/how-to/real-models', activeMatch: '/how-to/' },
      { text: 'Reference', link: '/reference/cli', activeMatch: '/reference/' },
    ],
    sidebar: {
      '/guide/': [...guide, ...howTo, ...reference],
      '/how-to/': [...guide, ...howTo, ...reference],
      '/reference/': [...guide, ...howTo, ...reference],
    },
    outline: { level: [2, 3] },
    search: { provider: 'local' },
  },
});
