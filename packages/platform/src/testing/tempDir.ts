/** A temporary folder for the life of the scope. */
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"

/**
 * World-readable (0755) so that an embedded Postgres, which runs as the `postgres` user when we are
 * root, can reach a data directory inside it.
 */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix))
      await fs.chmod(dir, 0o755)
      return dir
    }),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )
