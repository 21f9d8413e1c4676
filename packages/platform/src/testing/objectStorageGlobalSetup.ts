/**
 * vitest globalSetup: one local object store for the whole test run (radosgw when installed, else the
 * s3rver fallback with a warning), in a temporary folder. Tests reach it through `TestObjectStorage`
 * and make a fresh bucket each (see objectStorage.ts).
 *
 * `OBJECT_STORAGE_BACKEND=radosgw` makes the run fail instead of falling back (CI sets it);
 * `OBJECT_STORAGE_BACKEND=s3rver` forces the fallback.
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { type ObjectStorageBackend, type ObjectStorageInfo, startObjectStorage } from "../LocalObjectStorage.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's local object store: endpoint, credentials, backend and its folder. */
    svcObjectStorage: ObjectStorageInfo
  }
}

const backendFromEnv = (): ObjectStorageBackend | "auto" => {
  const value = process.env["OBJECT_STORAGE_BACKEND"]
  if (value === undefined || value === "" || value === "auto") return "auto"
  if (value === "radosgw" || value === "s3rver") return value
  throw new Error(`OBJECT_STORAGE_BACKEND must be auto, radosgw or s3rver (got "${value}")`)
}

export default async function setup(project: TestProject) {
  const backend = backendFromEnv()
  const scope = Scope.makeUnsafe()
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-test-s3-"))
  const cleanup = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await fs.rm(dir, { recursive: true, force: true })
  }
  try {
    const info = await Effect.runPromise(
      startObjectStorage({ dir, backend }).pipe(Scope.provide(scope), Effect.provide(NodeServices.layer))
    )
    project.provide("svcObjectStorage", info)
  } catch (error) {
    await cleanup()
    throw error
  }
  return cleanup
}
