/**
 * The run's tree on the page, drawn for runs of any size: the tree flattened into the rows a
 * person can see (a folded node's subtree left out), and only the rows in the tree's scrolled
 * view (plus a margin) in the DOM, each of a fixed height, placed over a spacer as tall as every
 * row together. A redraw builds the HTML of those few rows and changes only the ones that differ
 * (a batch of events touches the rows it changed), so that a run of 10,000 sessions costs what
 * one of a hundred does.
 *
 * It stays a tree to assistive technology (role=tree, each row a treeitem with its aria-level,
 * aria-setsize, aria-posinset and aria-expanded) and to the keyboard: one tab stop (the focused
 * row, else the selected one), Up/Down/Home/End/PageUp/PageDown move between rows, Right opens a
 * folded row or goes to its first child, Left folds an open one or goes to its parent; the row
 * moved to is scrolled into view and kept in the DOM while it has the focus, however far the
 * view is scrolled. Enter or a click selects (the page's own handler, on `button[data-node]`).
 */
import { esc } from './esc.js';
import { morph } from './morph.js';
import type { TreeRow } from './rows.js';

/** Every row's height (px): the spacer's height and each row's place follow from it. */
export const ROW_PX = 28;
/** Rows drawn above and below the view, so that a scroll shows drawn rows before the next frame. */
const MARGIN = 12;

/** What the page draws in one row: the button's content, and the row's name for assistive technology. */
export interface RowContent {
  html: string;
  label: string;
}

interface Shown {
  el: HTMLElement;
  top: number;
  /** The row's attributes and content as last drawn. */
  attrs: string;
  html: string;
}

export class VirtualTree {
  /** Nodes whose children are folded away. */
  readonly folded = new Set<string>();
  /** Changes whenever `folded` does (the page's cache of rows follows it). */
  foldings = 0;
  #host: HTMLElement | null = null;
  #space: HTMLElement | null = null;
  #rows: TreeRow[] = [];
  readonly #index = new Map<string, number>();
  readonly #shown = new Map<string, Shown>();
  #selected: string | null = null;
  /** The row with the tree's tab stop (it has the focus when the tree does). */
  #focus: string | null = null;
  #frame = 0;
  /** Where the view was scrolled to: the tree drawn again (back from another tab) opens there. */
  #scrollTop = 0;

  constructor(
    /** The content of a row, as the page draws it now. */
    readonly content: (row: TreeRow) => RowContent,
    /** A node was folded or opened: the page redraws (and flattens again). */
    readonly refolded: () => void,
  ) {}

  /** How many rows the tree has (drawn or not): every session, less those folded away. */
  get size(): number {
    return this.#host?.isConnected ? this.#rows.length : 0;
  }

  /** How many rows are in the DOM. */
  get drawn(): number {
    return this.#shown.size;
  }

  /** Another run: nothing folded, nothing focused, the view at its top. */
  reset(): void {
    this.folded.clear();
    this.foldings++;
    this.#focus = null;
    this.#selected = null;
    this.#scrollTop = 0;
  }

  /** Draws `rows` into `host` (the page's `#vtree`); a new host (the tree's view drawn again) starts over where the last one was scrolled to. */
  draw(host: HTMLElement, rows: TreeRow[], selected: string | null): void {
    const fresh = host !== this.#host;
    if (fresh) this.#attach(host);
    if (rows !== this.#rows || fresh) {
      this.#rows = rows;
      this.#index.clear();
      for (let i = 0; i < rows.length; i++) this.#index.set(rows[i]!.id, i);
      this.#space!.style.height = `${rows.length * ROW_PX}px`;
    }
    if (fresh && this.#scrollTop) host.scrollTop = this.#scrollTop;
    if (selected !== this.#selected) {
      this.#selected = selected;
      // a session selected from elsewhere (a link, the address) is brought into view
      const at = selected === null ? undefined : this.#index.get(selected);
      if (at !== undefined && !this.#hasFocus()) this.#reveal(at);
    }
    this.#paint();
  }

  /** Moves the tab stop (and the focus) to row `at`, scrolled into view. */
  focusRow(at: number): void {
    const row = this.#rows[Math.max(0, Math.min(at, this.#rows.length - 1))];
    if (!row) return;
    this.#focus = row.id;
    this.#reveal(this.#index.get(row.id)!);
    this.#paint();
    this.#button(row.id)?.focus({ preventScroll: true });
  }

  #attach(host: HTMLElement): void {
    this.#host = host;
    this.#shown.clear();
    host.replaceChildren();
    this.#space = document.createElement('div');
    this.#space.className = 'vspace';
    this.#space.setAttribute('role', 'none');
    host.append(this.#space);
    host.addEventListener('scroll', () => {
      this.#scrollTop = host.scrollTop;
      if (this.#frame) return;
      this.#frame = requestAnimationFrame(() => {
        this.#frame = 0;
        this.#paint();
      });
    });
    host.addEventListener('keydown', (e) => this.#key(e));
    host.addEventListener('focusin', (e) => {
      const id = (e.target as HTMLElement).closest<HTMLElement>('button[data-node]')?.dataset.node;
      if (id && id !== this.#focus) {
        this.#focus = id;
        this.#paint();
      }
    });
    host.addEventListener('click', (e) => {
      const id = (e.target as HTMLElement).closest<HTMLElement>('[data-twisty]')?.dataset.twisty;
      if (id) this.#fold(id, !this.folded.has(id));
    });
  }

  #hasFocus(): boolean {
    return Boolean(this.#host?.contains(document.activeElement));
  }

  #button(id: string): HTMLButtonElement | null {
    return this.#shown.get(id)?.el.querySelector<HTMLButtonElement>('button[data-node]') ?? null;
  }

  /** Scrolls the least that shows row `at` whole. */
  #reveal(at: number): void {
    const host = this.#host!;
    const top = at * ROW_PX;
    const view = host.clientHeight || window.innerHeight;
    if (top < host.scrollTop) host.scrollTop = top;
    else if (top + ROW_PX > host.scrollTop + view) host.scrollTop = top + ROW_PX - view;
  }

  #fold(id: string, fold: boolean): void {
    if (fold === this.folded.has(id)) return;
    if (fold) this.folded.add(id);
    else this.folded.delete(id);
    this.foldings++;
    // the focus in a subtree folded away goes to the node folded
    const focused = this.#hasFocus();
    this.refolded();
    if (focused && !this.#hasFocus()) {
      const at = this.#index.get(id);
      if (at !== undefined) this.focusRow(at);
    }
  }

  #key(e: KeyboardEvent): void {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const id = (e.target as HTMLElement).closest<HTMLElement>('button[data-node]')?.dataset.node;
    const at = id === undefined ? undefined : this.#index.get(id);
    if (at === undefined) return;
    const row = this.#rows[at]!;
    const page = Math.max(1, Math.floor((this.#host!.clientHeight || window.innerHeight) / ROW_PX) - 1);
    switch (e.key) {
      case 'ArrowDown':
        this.focusRow(at + 1);
        break;
      case 'ArrowUp':
        this.focusRow(at - 1);
        break;
      case 'Home':
        this.focusRow(0);
        break;
      case 'End':
        this.focusRow(this.#rows.length - 1);
        break;
      case 'PageDown':
        this.focusRow(at + page);
        break;
      case 'PageUp':
        this.focusRow(at - page);
        break;
      case 'ArrowRight':
        if (row.expanded === false) this.#fold(row.id, false);
        else if (row.expanded) this.focusRow(at + 1);
        break;
      case 'ArrowLeft':
        if (row.expanded) this.#fold(row.id, true);
        else if (row.parent !== null) this.focusRow(this.#index.get(row.parent) ?? at);
        break;
      default:
        return;
    }
    e.preventDefault();
  }

  /** Brings the DOM to the rows in view (and the focused one): new rows made, rows gone removed, changed ones changed. */
  #paint(): void {
    const host = this.#host;
    const space = this.#space;
    if (!host || !space || !host.isConnected) return;
    const rows = this.#rows;
    if (this.#focus === null || !this.#index.has(this.#focus)) {
      const refocus = this.#hasFocus();
      this.#focus = this.#selected !== null && this.#index.has(this.#selected) ? this.#selected : (rows[0]?.id ?? null);
      if (refocus && this.#focus !== null) queueMicrotask(() => this.#button(this.#focus!)?.focus({ preventScroll: true }));
    }
    const view = host.clientHeight || window.innerHeight;
    const first = Math.max(0, Math.floor(host.scrollTop / ROW_PX) - MARGIN);
    const last = Math.min(rows.length, Math.ceil((host.scrollTop + view) / ROW_PX) + MARGIN);
    const want: number[] = [];
    const focusAt = this.#focus === null ? undefined : this.#index.get(this.#focus);
    if (focusAt !== undefined && focusAt < first) want.push(focusAt);
    for (let i = first; i < last; i++) want.push(i);
    if (focusAt !== undefined && focusAt >= last) want.push(focusAt);
    const keep = new Set(want.map((i) => rows[i]!.id));
    for (const [id, s] of this.#shown) {
      if (keep.has(id)) continue;
      s.el.remove();
      this.#shown.delete(id);
    }
    let cursor: ChildNode | null = space.firstChild;
    for (const i of want) {
      const row = rows[i]!;
      const s = this.#row(row, i);
      // in order, without moving a row that is already in place (moving the focused one would drop its focus)
      if (s.el === cursor) cursor = cursor.nextSibling;
      else space.insertBefore(s.el, cursor);
    }
  }

  /** One row, made or brought up to date. */
  #row(row: TreeRow, at: number): Shown {
    const { html, label } = this.content(row);
    const selected = row.id === this.#selected;
    const attrs = `${row.level}|${row.setsize}|${row.posinset}|${row.expanded}|${selected}|${label}`;
    const inner = `<span class="twisty"${row.expanded === null ? '' : ` data-twisty="${esc(row.id)}" title="${row.expanded ? 'fold' : 'open'} (← →)"`} aria-hidden="true">${row.expanded === null ? '' : row.expanded ? '▾' : '▸'}</span><button class="node" id="node-${esc(row.id)}" data-node="${esc(row.id)}" aria-current="${selected}" tabindex="${row.id === this.#focus ? 0 : -1}">${html}</button>`;
    let s = this.#shown.get(row.id);
    if (!s) {
      const el = document.createElement('div');
      el.className = 'trow';
      el.setAttribute('role', 'treeitem');
      el.id = `row-${row.id}`;
      el.innerHTML = inner;
      s = { el, top: -1, attrs: '', html: inner };
      this.#shown.set(row.id, s);
    } else if (s.html !== inner) {
      morph(s.el, inner);
      s.html = inner;
    }
    if (s.attrs !== attrs) {
      const el = s.el;
      el.setAttribute('aria-level', String(row.level));
      el.setAttribute('aria-setsize', String(row.setsize));
      el.setAttribute('aria-posinset', String(row.posinset));
      if (row.expanded === null) el.removeAttribute('aria-expanded');
      else el.setAttribute('aria-expanded', String(row.expanded));
      el.setAttribute('aria-selected', String(selected));
      el.setAttribute('aria-label', label);
      el.style.paddingLeft = `${(row.level - 1) * 18}px`;
      s.attrs = attrs;
    }
    const top = at * ROW_PX;
    if (s.top !== top) {
      s.el.style.top = `${top}px`;
      s.top = top;
    }
    return s;
  }
}

