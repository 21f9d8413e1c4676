/**
 * `npm run bench:blob-browser`: a 256 MiB file uploaded from headless Chromium (Debian's, through
 * playwright-core) through the upload route to radosgw — begin, part PUTs straight to storage (8 MiB
 * parts, 4 in flight, the demo's route: multipart above 16 MiB), complete — against a plain presigned
 * single PUT of the same file (`fetch` with the Blob, signed server side by `Bucket.signedUploadUrl`), in
 * the same run, on a radosgw this script starts itself (temporary OBJECT_STORAGE_DIR, stopped at the end).
 *
 * The file (random bytes) is written once to disk and picked through a file input, so both uploads read the
 * same file-backed Blob, as for a person picking a file. The
 * two alternate; each figure is the median MiB/s of BENCH_ITERATIONS (default 3) timed runs after a
 * warm-up of each. Ratio = route / plain (above 1: the part pool beats the single PUT).
 *
 * BENCH_SIZE_MIB changes the file size (default 256), BENCH_CONCURRENCY the part PUTs in flight (default 4,
 * the client's default).
 */
import { Bucket, formatBlobToken } from "@svc/blob"
import * as Demo from "@svc/blob/demo"
import { LocalObjectStorage } from "@svc/platform"
import { Context, Effect, Layer, Redacted, Scope } from "effect"
import { HttpServer } from "effect/http"
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { chromium } from "playwright-core"
import { withLocalObjectStorage } from "./support.ts"

const CHROMIUM = "/usr/bin/chromium"
const ITERATIONS = Math.max(1, Number(process.env["BENCH_ITERATIONS"] ?? "3"))
const SIZE_MIB = Number(process.env["BENCH_SIZE_MIB"] ?? "256")
const SIZE = SIZE_MIB * 1024 * 1024
/** part PUTs in flight (the client's default is 4) */
const CONCURRENCY = Number(process.env["BENCH_CONCURRENCY"] ?? "4")

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 0 ? ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2 : s[m] ?? 0
}

const program = Effect.gen(function*() {
  if (!existsSync(CHROMIUM)) {
    return yield* Effect.die(new Error(`Chromium is not installed at ${CHROMIUM}: run \`bash scripts/install-browser.sh\` first`))
  }
  const storage = yield* LocalObjectStorage
  if (storage.backend !== "radosgw") {
    yield* Effect.logWarning("radosgw is not installed: the figures below are for s3rver, not the real thing")
  }
  const bucketName = "bench-browser"
  yield* storage.createBucket(bucketName)
  const bucket = yield* Bucket.make({
    token: formatBlobToken({
      endpoint: storage.endpoint,
      bucket: bucketName,
      accessKeyId: storage.accessKeyId,
      secretAccessKey: Redacted.value(storage.secretAccessKey),
      region: storage.region
    })
  })
  const scope = yield* Effect.scope
  const context = yield* Layer.buildWithScope(Demo.make({ bucket, port: 0, host: "127.0.0.1", maxSize: "2GB" }), scope)
  const address = Context.get(context, HttpServer.HttpServer).address
  const base = `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`

  const browser = yield* Effect.acquireRelease(
    Effect.promise(() =>
      chromium.launch({
        executablePath: CHROMIUM,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
      })
    ),
    (b) => Effect.promise(() => b.close())
  )
  const page = yield* Effect.promise(() => browser.newPage())
  yield* Effect.promise(() => page.goto(base))
  yield* Effect.promise(() => page.waitForFunction(() => "svcBlob" in globalThis))
  // the file, written once to disk and picked through a file input, as a person picks one: a file-backed
  // Blob (a 256 MiB Blob built in page memory runs into Chromium's blob memory limit, ERR_BLOB_OUT_OF_MEMORY)
  const filePath = path.join(yield* Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-bench-file-"))), "bench.bin")
  yield* Effect.addFinalizer(() => Effect.promise(() => fs.rm(path.dirname(filePath), { recursive: true, force: true })))
  yield* Effect.promise(async () => {
    const handle = await fs.open(filePath, "w")
    const chunk = 4 * 1024 * 1024
    for (let offset = 0; offset < SIZE; offset += chunk) await handle.write(randomBytes(Math.min(chunk, SIZE - offset)))
    await handle.close()
  })
  yield* Effect.promise(() =>
    page.evaluate(() => {
      const input = document.createElement("input")
      input.type = "file"
      input.id = "bench-file"
      input.addEventListener("change", () => {
        ;(globalThis as any).benchFile = input.files![0]
      })
      document.body.append(input)
    })
  )
  yield* Effect.promise(() => page.setInputFiles("#bench-file", filePath))
  yield* Effect.promise(() => page.waitForFunction(() => (globalThis as any).benchFile !== undefined))

  const viaRoute = (n: number) =>
    Effect.promise(() =>
      page.evaluate(async ({ pathname, concurrency }) => {
        const { upload, route } = (globalThis as any).svcBlob
        const started = performance.now()
        const result = await upload((globalThis as any).benchFile, { route, pathname, concurrency, resume: false })
        return { ms: performance.now() - started, size: result.size as number }
      }, { pathname: `route-${n}.bin`, concurrency: CONCURRENCY })
    )

  const plain = (n: number) =>
    Effect.gen(function*() {
      const signed = yield* bucket.signedUploadUrl(`bench/plain-${n}.bin`, {
        contentType: "application/octet-stream",
        size: SIZE,
        expiresIn: 600,
        allowOverwrite: true
      })
      return yield* Effect.promise(() =>
        page.evaluate(async ({ url, headers }) => {
          const started = performance.now()
          const response = await fetch(url, { method: "PUT", headers, body: (globalThis as any).benchFile })
          if (!response.ok) throw new Error(`plain PUT answered ${response.status}`)
          return { ms: performance.now() - started, size: (globalThis as any).benchFile.size as number }
        }, { url: signed.url, headers: signed.headers })
      )
    })

  const mibPerSecond = (run: { ms: number; size: number }) => {
    if (run.size !== SIZE) throw new Error(`stored ${run.size} bytes, expected ${SIZE}`)
    return SIZE / 1024 / 1024 / (run.ms / 1000)
  }

  yield* Effect.log(`warm-up (${SIZE_MIB} MiB each way)`)
  yield* viaRoute(0)
  yield* plain(0)
  const routeRates: Array<number> = []
  const plainRates: Array<number> = []
  for (let i = 1; i <= ITERATIONS; i++) {
    routeRates.push(mibPerSecond(yield* viaRoute(i)))
    plainRates.push(mibPerSecond(yield* plain(i)))
    yield* Effect.log(`run ${i}: route ${routeRates.at(-1)!.toFixed(1)} MiB/s, plain ${plainRates.at(-1)!.toFixed(1)} MiB/s`)
  }
  // the last objects really are there, whole
  const stored = yield* bucket.info(`bench/plain-${ITERATIONS}.bin`)
  if (stored.size !== SIZE) throw new Error(`the plain PUT stored ${stored.size} bytes`)

  const route = median(routeRates)
  const direct = median(plainRates)
  console.log([
    `blob-browser: ${SIZE_MIB} MiB from headless Chromium to radosgw, median of ${ITERATIONS} (${os.cpus().length} cores)`,
    `  through the route (multipart, 8 MiB parts, ${CONCURRENCY} in flight): ${route.toFixed(1)} MiB/s   [${routeRates.map((r) => r.toFixed(1)).join(", ")}]`,
    `  plain presigned single PUT:                            ${direct.toFixed(1)} MiB/s   [${plainRates.map((r) => r.toFixed(1)).join(", ")}]`,
    `  ratio route / plain: ${(route / direct).toFixed(3)}`
  ].join("\n"))
})

const main = async () => {
  // radosgw keeps objects in a memstore OSD (default 2 GiB) and frees deleted data only at its garbage
  // collection, hours later; a full OSD makes radosgw stall, not fail. Size it for every upload of the run.
  process.env["OBJECT_STORAGE_MEMSTORE_BYTES"] ??= String(2 * (ITERATIONS + 1) * SIZE + 512 * 1024 * 1024)
  await withLocalObjectStorage("svc-bench-blob-browser-", program)
}

await main()
