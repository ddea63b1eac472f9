/**
 * What Node would print for an error nobody caught passes the redactor first: a key in an error's
 * message or stack must not reach a terminal or a log collector. The process then ends as Node
 * ends it (exit code 1). A promise rejected without a handler is such an error too.
 */
import { redactText } from '../actors/config/secrets.js';

export function redactUncaught(target: NodeJS.Process = process): void {
  const fatal = (error: unknown) => {
    const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : `Uncaught ${typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error))}`;
    try {
      target.stderr.write(`${redactText(text)}\n`);
    } finally {
      target.exit(1);
    }
  };
  target.on('uncaughtException', fatal);
  target.on('unhandledRejection', fatal);
}
