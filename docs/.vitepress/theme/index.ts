/**
 * The default theme, and the machines' diagrams drawn in the browser: a ```mermaid block is
 * rendered as highlighted source at build time (and stays readable without JavaScript), then
 * replaced by Mermaid's SVG once the page is shown. Mermaid is loaded from the site itself
 * (public/mermaid/, copied from node_modules by test/docs/generate.ts), only on pages that have a
 * diagram: bundling it with the site cost most of the build's time.
 */
import DefaultTheme from 'vitepress/theme';
import { onContentUpdated, useData, withBase, type Theme } from 'vitepress';
import './style.css';

interface Mermaid {
  initialize(config: Record<string, unknown>): void;
  render(id: string, text: string): Promise<{ svg: string }>;
}

let mermaid: Promise<Mermaid> | null = null;
let drawn = 0;

async function drawDiagrams(dark: boolean): Promise<void> {
  const blocks = [...document.querySelectorAll<HTMLElement>('div.language-mermaid')];
  if (blocks.length === 0) return;
  mermaid ??= import(/* @vite-ignore */ withBase('/mermaid/mermaid.esm.min.mjs')).then((m: { default: Mermaid }) => m.default);
  const m = await mermaid;
  m.initialize({ startOnLoad: false, securityLevel: 'strict', theme: dark ? 'dark' : 'default', state: { useMaxWidth: true } });
  for (const block of blocks) {
    const source = block.querySelector('code')?.textContent ?? '';
    const { svg } = await m.render(`a2a-diagram-${drawn++}`, source);
    const figure = document.createElement('div');
    figure.className = 'a2a-diagram';
    figure.innerHTML = svg;
    figure.dataset.source = source;
    block.replaceWith(figure);
  }
}

export default {
  extends: DefaultTheme,
  setup() {
    const { isDark } = useData();
    // each time a page's content is in the DOM: the first page, and every page navigated to
    onContentUpdated(() => void drawDiagrams(isDark.value));
  },
} satisfies Theme;
