/**
 * Heading anchors as GitHub makes them (`## The sandbox of \`run_command\`` →
 * `#the-sandbox-of-run_command`), so that a link into a page works both on the site (VitePress is
 * given this function: config.mts) and when the same Markdown file is read on GitHub. VitePress's
 * own slugify turns `_` and `.` into `-`, which GitHub keeps or drops. test/docs checks every link
 * and anchor with this same function.
 */
export function slugify(text: string): string {
  return text
    .trim()
    .toLowerCase()
    // what GitHub drops: everything but letters, digits, marks, "_", "-" and spaces
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}
