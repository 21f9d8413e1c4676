/**
 * Creating a folder and its missing parents.
 *
 * Node's `mkdir(path, { recursive: true })` never returns for a path under a folder that refuses new
 * entries with ENOENT, such as `/proc` (it retries forever, on the main thread's libuv pool, and the
 * process then ignores Ctrl-C's clean stop): `EMBEDDED_POSTGRES_DIR=/proc/pg svc start` hung that
 * way. Here each missing level is made on its own, so such a path fails at once with ENOENT.
 */
import { statSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"

const codeOf = (error: unknown): unknown =>
  typeof error === "object" && error !== null && "code" in error ? error.code : undefined

/** A path already there is fine when it is a folder (or a link to one); a file there is ENOTDIR. */
const existing = async (directory: string, error: unknown): Promise<void> => {
  if (codeOf(error) !== "EEXIST") throw error
  const stats = await fs.stat(directory).catch(() => undefined)
  if (stats?.isDirectory() !== true) {
    throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${directory}'`), { code: "ENOTDIR", path: directory })
  }
}

/** Makes `directory` (with `mode`) and any missing parent; a folder already there is fine. */
export const makeDirectory = async (directory: string, mode?: number): Promise<void> => {
  try {
    await fs.mkdir(directory, { mode })
  } catch (error) {
    const parent = path.dirname(directory)
    if (codeOf(error) !== "ENOENT" || parent === directory) return existing(directory, error)
    await makeDirectory(parent)
    await fs.mkdir(directory, { mode }).catch((again: unknown) => existing(directory, again))
  }
}

/**
 * The file standing where `directory` is to be, itself or a parent, or undefined: none (the nearest
 * thing there is a folder), or it cannot be told (no permission to look). A folder setting naming a file
 * failed later with messages that did not say so (`No embedded Postgres in <file> yet`, "an earlier
 * first start … was interrupted", mkdir's ENOTDIR from a script).
 */
export const fileInTheWay = (directory: string): string | undefined => {
  for (let at = path.resolve(directory); ; at = path.dirname(at)) {
    try {
      return statSync(at).isDirectory() ? undefined : at
    } catch (error) {
      // not there (or a parent is a file: ENOTDIR): look one level up
      if ((codeOf(error) !== "ENOENT" && codeOf(error) !== "ENOTDIR") || path.dirname(at) === at) return undefined
    }
  }
}
