/** Text as it goes into the page's HTML or an attribute: the five characters HTML gives a meaning, escaped (null and undefined as nothing). */
export const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
