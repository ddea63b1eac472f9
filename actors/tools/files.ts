/**
 * Reading and writing a worktree file through a descriptor, checked on the file actually opened:
 * a hard link shares its inode with every other name of the file, possibly one outside the
 * worktree, so a regular file with more than one link is neither read nor written. Opening with
 * O_NOFOLLOW refuses a path that became a symbolic link after it was resolved.
 */
import { constants, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { A2AError } from '../errors.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;

export function hardLinked(relative: string, links: number): A2AError {
  return new A2AError(
    'TOOL_NOT_ALLOWED',
    `${relative} has ${links} hard links: it shares its content with another name, which may be outside the worktree, so it is not read or written. ` +
      'Copy it to a new file (cp) and work on the copy, or ask a person to replace the link.',
    { where: relative },
  );
}

async function opened(path: string, flags: number, relative: string, mode?: number): Promise<{ handle: FileHandle; info: Stats }> {
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO put where a file was expected must not hang the tool (no effect on files)
    handle = await open(path, flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new A2AError('TOOL_NOT_ALLOWED', `${relative} became a symbolic link while it was being opened; nothing was done.`, { where: relative });
    }
    throw error;
  }
  const info = await handle.stat();
  if (!info.isFile()) {
    await handle.close();
    throw new A2AError('VALIDATION_ERROR', `${relative} is not a regular file.`, { where: relative });
  }
  if (info.nlink > 1) {
    await handle.close();
    throw hardLinked(relative, info.nlink);
  }
  return { handle, info };
}

/** The file's size, and its content unless it has more than `maxBytes` (refused when it is hard-linked). */
export async function readConfined(path: string, relative: string, maxBytes = Infinity): Promise<{ size: number; content: Buffer | null }> {
  const { handle, info } = await opened(path, O_RDONLY, relative);
  try {
    return { size: info.size, content: info.size > maxBytes ? null : await handle.readFile() };
  } finally {
    await handle.close();
  }
}

/**
 * Writes `content` into the file: a new file is created exclusively, an existing one is changed
 * in place only when its inode is its own (one link), so that its mode and owner are kept.
 */
export async function writeConfined(path: string, relative: string, content: string, create: boolean): Promise<void> {
  const { handle } = await opened(path, create ? O_WRONLY | O_CREAT | O_EXCL : O_WRONLY, relative, 0o666);
  try {
    await handle.truncate(0);
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}
