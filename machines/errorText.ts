/**
 * What went wrong, as text: an Error's message, a string as it is, anything else as JSON. One
 * function for the machines (pure) and everything that imports them.
 */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
