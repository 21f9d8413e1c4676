/**
 * Creating a folder and its missing parents.
 *
 * Node's `mkdir(path, { recursive: true })` never returns for a path under a folder that refuses new
 * entries with ENOENT, such as `/proc` (it retries forever, on the main thread's libuv pool, and the
 * process then ignores Ctrl-C's clean stop): `EMBEDDED_POSTGRES_DIR=/proc/pg svc start` hung that
 * way. Here each missing level is made on its own, so such a path fails at once with ENOENT.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"

const codeOf = (error: unknown): unknown =>
  typeof error === "object" && error !== null && "code" in error ? error.code : undefined

/** Makes `directory` (with `mode`) and any missing parent; a folder already there is fine. */
export const makeDirectory = async (directory: string, mode?: number): Promise<void> => {
  try {
    await fs.mkdir(directory, { mode })
  } catch (error) {
    if (codeOf(error) === "EEXIST") return
    const parent = path.dirname(directory)
    if (codeOf(error) !== "ENOENT" || parent === directory) throw error
    await makeDirectory(parent)
    await fs.mkdir(directory, { mode }).catch((again: unknown) => {
      if (codeOf(again) !== "EEXIST") throw again
    })
  }
}
