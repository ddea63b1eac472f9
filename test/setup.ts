// Tests never read the developer's own user config (~/.config/a2a): point it at an empty dir.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.A2A_CONFIG_HOME = mkdtempSync(join(tmpdir(), 'a2a-user-config-'));
