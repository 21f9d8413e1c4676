/**
 * makeDirectory: missing parents made, an existing folder accepted, and a path under a folder that
 * refuses new entries (`/proc`) failing at once where Node's recursive mkdir never returns.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileInTheWay, makeDirectory } from "../../src/Directory.ts"

describe("makeDirectory", () => {
  it("makes the missing parents with the folder, and accepts a folder already there", async () => {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), "svc-directory-"))
    try {
      const nested = path.join(root, "a", "b", "c")
      await makeDirectory(nested, 0o700)
      assert.isTrue((await fs.stat(nested)).isDirectory())
      assert.strictEqual((await fs.stat(nested)).mode & 0o777, 0o700)
      await makeDirectory(nested)
      await makeDirectory(root)
    } finally {
      await fs.rm(root, { recursive: true, force: true })
    }
  })

  it("fails with ENOENT under /proc instead of retrying for ever", async () => {
    const error = await makeDirectory("/proc/svc-directory-test/pg").then(() => undefined, (error: unknown) => error)
    assert.strictEqual((error as NodeJS.ErrnoException | undefined)?.code, "ENOENT")
  }, 5_000)

  it("fails on a file where a folder is asked, or a path under one", async () => {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), "svc-directory-"))
    try {
      await fs.writeFile(path.join(root, "file"), "")
      const error = await makeDirectory(path.join(root, "file", "pg")).then(() => undefined, (error: unknown) => error)
      assert.strictEqual((error as NodeJS.ErrnoException | undefined)?.code, "ENOTDIR")
      // and the file itself where a folder is asked
      const itself = await makeDirectory(path.join(root, "file")).then(() => undefined, (error: unknown) => error)
      assert.strictEqual((itself as NodeJS.ErrnoException | undefined)?.code, "ENOTDIR")
    } finally {
      await fs.rm(root, { recursive: true, force: true })
    }
  })
})

describe("fileInTheWay", () => {
  it("names the file where a folder is to be, itself or a parent; none for a folder, a path still to make, or under one", async () => {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), "svc-directory-"))
    try {
      const file = path.join(root, "file")
      await fs.writeFile(file, "")
      assert.strictEqual(fileInTheWay(file), file)
      assert.strictEqual(fileInTheWay(path.join(file, "pg")), file)
      assert.strictEqual(fileInTheWay(path.join(file, "a", "b")), file)
      assert.isUndefined(fileInTheWay(root))
      assert.isUndefined(fileInTheWay(path.join(root, "new", "pg")))
      // a link to a folder is a folder
      await fs.symlink(root, path.join(root, "link"))
      assert.isUndefined(fileInTheWay(path.join(root, "link", "pg")))
    } finally {
      await fs.rm(root, { recursive: true, force: true })
    }
  })
})
