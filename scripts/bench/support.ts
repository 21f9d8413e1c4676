/**
 * What the benchmarks share: closed-loop load, percentiles, number formatting, keep-alive GETs, a local
 * radosgw, and a recorder of the SQL a service sends.
 */
import { LocalObjectStorage } from "@svc/platform"
import { Effect, type Scope } from "effect"
import type { Statement } from "effect/sql"
import * as fs from "node:fs/promises"
import * as Http from "node:http"
import * as os from "node:os"
import * as path from "node:path"

/** The p-quantile (0..1) of ascending `sorted` latencies; 0 for none. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

/** `12,345.6`, with exactly `digits` fraction digits. */
export const fmt = (n: number, digits = 1): string =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

/** Runs `task` from `concurrency` loops for `seconds` (closed loop); latencies in ms. */
export const load = async (concurrency: number, seconds: number, task: (i: number) => Promise<void>) => {
  const latencies: Array<number> = []
  const end = performance.now() + seconds * 1000
  const started = performance.now()
  let i = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const t0 = performance.now()
      await task(i++)
      latencies.push(performance.now() - t0)
    }
  }))
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), rps: latencies.length / elapsed, n: latencies.length }
}

/** GET over a keep-alive `agent`: status and body text. */
export const httpGet = (agent: Http.Agent, url: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    Http.get(url, { agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk) => chunks.push(chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
    }).on("error", reject)
  })

/** Runs `program` with a local object storage (radosgw) of its own in a temporary folder, removed after. */
export const withLocalObjectStorage = async <A, E>(
  prefix: string,
  program: Effect.Effect<A, E, LocalObjectStorage | Scope.Scope>
): Promise<A> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix))
  try {
    return await Effect.runPromise(
      Effect.scoped(program).pipe(
        Effect.provide(LocalObjectStorage.layerAt({ dir }))
      )
    )
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
  }
}

/** A statement as the service sent it: SQL text and parameter values. */
export interface RecordedStatement {
  readonly text: string
  readonly values: Array<unknown>
}

/**
 * Records the SQL a service sends: provide `transformer` as `Statement.CurrentTransformer` (it sees
 * every compiled statement), then `during(run)` answers the statements compiled while `run` ran.
 */
export const statementRecorder = () => {
  let recording: Array<RecordedStatement> | undefined
  const transformer: Statement.Transformer = (statement) => {
    if (recording !== undefined) {
      const [text, values] = statement.compile()
      recording.push({ text, values: [...values] })
    }
    return Effect.succeed(statement)
  }
  const during = async (run: () => Promise<unknown>): Promise<ReadonlyArray<RecordedStatement>> => {
    const statements: Array<RecordedStatement> = []
    recording = statements
    try {
      await run()
      return statements
    } finally {
      recording = undefined
    }
  }
  return { transformer, during }
}
