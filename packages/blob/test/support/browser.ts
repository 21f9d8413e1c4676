/**
 * Test support: the uploads demo started in process on a fresh radosgw bucket, and Debian's Chromium
 * driven by playwright-core (never a downloaded browser).
 */
import { Context, Effect, Exit, Layer, References, Scope } from "effect"
import { HttpServer } from "effect/http"
import { existsSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"
import { TestObjectStorage } from "../../../platform/src/testing/objectStorage.ts"
import type { BucketApi } from "../../src/server/Bucket.ts"
import * as Demo from "../../src/demo/Service.ts"
import { freshBucket } from "./storage.ts"

export const CHROMIUM = "/usr/bin/chromium"

/** Launches Chromium; a missing one fails (not skips) with what to run. */
export const launchChromium = async (): Promise<Browser> => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM}: run \`bash scripts/install-browser.sh\` (apt-get install chromium) first`)
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
  })
}

export interface RunningDemo {
  readonly url: string
  readonly bucket: BucketApi
  readonly close: () => Promise<void>
}

/** The demo on a fresh bucket of the run's radosgw, on a free port. */
export const startDemo = async (
  prefix: string,
  options: Omit<Demo.DemoOptions, "bucket" | "port"> = {}
): Promise<RunningDemo> => {
  const scope = Scope.makeUnsafe()
  const build = Effect.gen(function*() {
    const bucket = yield* freshBucket(prefix)
    // warnings and errors only: a line per request of the page would bury the test output
    const quiet = Layer.succeed(References.MinimumLogLevel, "Warn")
    const context = yield* Layer.buildWithScope(
      Demo.make({ bucket, port: 0, host: "127.0.0.1", ...options }).pipe(Layer.provide(quiet)),
      scope
    )
    const server = Context.get(context, HttpServer.HttpServer)
    const address = server.address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    return { url: `http://127.0.0.1:${port}`, bucket }
  }).pipe(Effect.provide(TestObjectStorage), Scope.provide(scope))
  const started = await Effect.runPromise(build).catch(async (error: unknown) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  })
  return { ...started, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}
