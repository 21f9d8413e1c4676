/**
 * `npm run bench:blob`: put and get of 1 KiB, 1 MiB and 64 MiB objects through `@svc/blob`'s Bucket
 * against the raw `S3Client` calls, in the same run, on a radosgw this script starts itself
 * (`LocalObjectStorage.layer` with a temporary OBJECT_STORAGE_DIR; stopped at the end).
 *
 * Raw: `PutObjectCommand` with the bytes / `GetObjectCommand` + `transformToByteArray`, on an S3Client
 * configured like the Bucket's (path style, checksums only when required, which radosgw needs for
 * streamed bodies). Bucket: `put(path, bytes, { allowOverwrite: true })` (its defaults otherwise: sniffing
 * on, multipart above 100 MiB with 4 parts in flight) / `getBytes(path)`. The two alternate op by op;
 * each figure is the median (and mean) of the timed iterations after a warm-up. Ratio = Bucket / raw
 * median; the target is <= 1.10 for every size.
 *
 * BENCH_ITERATIONS scales the iteration counts (default 1).
 */
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3"
import { Bucket, formatBlobToken } from "@svc/blob"
import { LocalObjectStorage } from "@svc/platform"
import { Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import { withLocalObjectStorage } from "./support.ts"

const SCALE = Number(process.env["BENCH_ITERATIONS"] ?? "1")
const sizes = [
  { label: "1 KiB", bytes: 1024, iterations: Math.round(300 * SCALE), warmup: 30 },
  { label: "1 MiB", bytes: 1024 * 1024, iterations: Math.round(60 * SCALE), warmup: 5 },
  { label: "64 MiB", bytes: 64 * 1024 * 1024, iterations: Math.max(3, Math.round(6 * SCALE)), warmup: 1 }
]

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 0 ? ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2 : s[m] ?? 0
}
const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
const ms = (x: number) => x < 10 ? x.toFixed(2) : x.toFixed(1)

const timed = async (f: () => Promise<unknown>) => {
  const start = performance.now()
  await f()
  return performance.now() - start
}

const program = Effect.gen(function*() {
  const storage = yield* LocalObjectStorage
  if (storage.backend !== "radosgw") {
    yield* Effect.logWarning("radosgw is not installed: the figures below are for s3rver, not the real thing")
  }
  const bucketName = `bench-${randomBytes(4).toString("hex")}`
  yield* storage.createBucket(bucketName)
  const secretAccessKey = Redacted.value(storage.secretAccessKey)
  const raw = new S3Client({
    endpoint: storage.endpoint,
    region: storage.region,
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    credentials: { accessKeyId: storage.accessKeyId, secretAccessKey }
  })
  const bucket = yield* Bucket.make({
    token: formatBlobToken({
      endpoint: storage.endpoint,
      bucket: bucketName,
      accessKeyId: storage.accessKeyId,
      secretAccessKey,
      region: storage.region
    })
  })

  const rows: Array<{ size: string; op: string; raw: number; blob: number; rawMean: number; blobMean: number }> = []
  for (const size of sizes) {
    const data = new Uint8Array(randomBytes(size.bytes))
    const ops = {
      put: {
        raw: (key: string) =>
          raw.send(new PutObjectCommand({ Bucket: bucketName, Key: key, Body: data, ContentType: "application/octet-stream" })),
        blob: (key: string) =>
          Effect.runPromise(bucket.put(key, data, { allowOverwrite: true, contentType: "application/octet-stream" }))
      },
      get: {
        raw: async (key: string) => {
          const out = await raw.send(new GetObjectCommand({ Bucket: bucketName, Key: key }))
          const bytes = await out.Body!.transformToByteArray()
          if (bytes.length !== size.bytes) throw new Error("short read")
        },
        blob: async (key: string) => {
          const bytes = await Effect.runPromise(bucket.getBytes(key))
          if (bytes.length !== size.bytes) throw new Error("short read")
        }
      }
    }
    for (const [op, impl] of Object.entries(ops)) {
      const keyRaw = `${size.label.replace(" ", "")}/raw.bin`
      const keyBlob = `${size.label.replace(" ", "")}/blob.bin`
      const rawTimes: Array<number> = []
      const blobTimes: Array<number> = []
      yield* Effect.promise(async () => {
        for (let i = 0; i < size.warmup; i++) {
          await impl.raw(keyRaw)
          await impl.blob(keyBlob)
        }
        for (let i = 0; i < size.iterations; i++) {
          // alternate which goes first so drift and caching favour neither
          if (i % 2 === 0) {
            rawTimes.push(await timed(() => impl.raw(keyRaw)))
            blobTimes.push(await timed(() => impl.blob(keyBlob)))
          } else {
            blobTimes.push(await timed(() => impl.blob(keyBlob)))
            rawTimes.push(await timed(() => impl.raw(keyRaw)))
          }
        }
      })
      rows.push({
        size: size.label,
        op,
        raw: median(rawTimes),
        blob: median(blobTimes),
        rawMean: mean(rawTimes),
        blobMean: mean(blobTimes)
      })
      const row = rows[rows.length - 1]!
      yield* Effect.log(
        `${size.label} ${op}: raw ${ms(row.raw)} ms, Bucket ${ms(row.blob)} ms (median of ${size.iterations}), ratio ${(row.blob / row.raw).toFixed(3)}`
      )
    }
  }
  raw.destroy()

  const lines = [
    "",
    `@svc/blob vs raw S3Client on ${storage.backend} (${storage.endpoint}), ${os.cpus().length} cores`,
    "| size | op | raw median ms | Bucket median ms | raw mean ms | Bucket mean ms | MB/s (Bucket) | ratio (median) | target <= 1.10 |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => {
      const bytes = sizes.find((s) => s.label === r.size)!.bytes
      const ratio = r.blob / r.raw
      return `| ${r.size} | ${r.op} | ${ms(r.raw)} | ${ms(r.blob)} | ${ms(r.rawMean)} | ${ms(r.blobMean)} | ${(bytes / 1e6 / (r.blob / 1000)).toFixed(1)} | ${ratio.toFixed(3)} | ${ratio <= 1.1 ? "ok" : "MISSED"} |`
    })
  ]
  console.log(lines.join("\n"))
})

const main = async () => {
  await withLocalObjectStorage("svc-bench-blob-", program)
}

await main()
