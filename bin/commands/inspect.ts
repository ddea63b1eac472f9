/** `a2a inspect`: the relay and page through which a browser shows runs in the Stately inspector. */
import { startInspectorServer } from '../../adapters/inspector.js';

export async function inspectCommand(
  options: { port?: number; host?: string },
  out: NodeJS.WritableStream,
  untilStopped: () => Promise<void> = () => new Promise((resolve) => process.once('SIGINT', () => resolve())),
): Promise<number> {
  const server = await startInspectorServer({ port: options.port ?? 8080, host: options.host ?? '127.0.0.1' });
  out.write(
    `Stately inspector relay on ${server.wsUrl}\n` +
      `  open ${server.pageUrl} in a browser, then run:  a2a run <plan> --inspect ${server.wsUrl}\n` +
      `  (Ctrl-C to stop)\n`,
  );
  await untilStopped();
  await server.close();
  return 0;
}
