/**
 * The run's tree as the rows a person sees (the studio's tree view draws them: tree.ts): depth
 * first, each with its level and its place among its siblings, a folded node's subtree left out.
 * Pure (no DOM), so that it is tested without a browser.
 */
import type { RunView } from '../../../actors/observation/runView.js';

export interface TreeRow {
  id: string;
  /** 1 for a worker, 2 for its sub-tasks, … (aria-level). */
  level: number;
  /** How many siblings it has, itself included, and where it is among them (aria-setsize, aria-posinset). */
  setsize: number;
  posinset: number;
  /** Its children shown (true), folded (false), or none (null). */
  expanded: boolean | null;
  /** The row of its parent (null for a worker). */
  parent: string | null;
}

/** The rows of the tree as drawn: depth-first, the subtree of a folded node left out (iterative, each node once). */
export function flatten(view: RunView, folded: ReadonlySet<string>): TreeRow[] {
  const rows: TreeRow[] = [];
  const seen = new Set<string>();
  const present = (ids: readonly string[]) => ids.filter((id) => view.nodes.has(id));
  const roots = present(view.roots);
  const stack: Array<{ id: string; level: number; setsize: number; posinset: number; parent: string | null }> = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push({ id: roots[i]!, level: 1, setsize: roots.length, posinset: i + 1, parent: null });
  while (stack.length > 0) {
    const at = stack.pop()!;
    if (seen.has(at.id)) continue;
    seen.add(at.id);
    const children = present(view.nodes.get(at.id)!.children);
    const open = children.length > 0 && !folded.has(at.id);
    rows.push({ ...at, expanded: children.length === 0 ? null : open });
    if (!open) continue;
    for (let i = children.length - 1; i >= 0; i--) stack.push({ id: children[i]!, level: at.level + 1, setsize: children.length, posinset: i + 1, parent: at.id });
  }
  return rows;
}

