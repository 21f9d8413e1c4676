/**
 * Test support for real service processes: `node src/main.ts` as a child process on a given
 * database, a slow local JSON feed that keeps runs going, and a SQL client on that database.
 */
import { PgClient } from "@effect/sql-pg"
import { acceptsConnections, freePort } from "@svc/platform"
import { tempDir } from "@svc/platform/testing"
import { Effect, Redacted, Schedule } from "effect"
import { Reactivity } from "effect/reactivity"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import type * as Http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { SourceConfig } from "../src/Sources.ts"
import { httpServer } from "./support.ts"

export const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url))
export const CLI = fileURLToPath(new URL("../../cli/src/bin.ts", import.meta.url))

export interface ServiceProcess {
  readonly port: number
  readonly baseUrl: string
  readonly child: ChildProcess
  /** stdout + stderr so far */
  readonly output: () => string
  /** resolves with the exit code (or the signal name) */
  readonly exited: Promise<number | string>
}

/** A listings service process on `databaseUrl`; killed (SIGKILL) when the scope closes if still alive. */
export const startService = (options: {
  readonly databaseUrl: string
  readonly sources: ReadonlyArray<SourceConfig>
  readonly env?: Record<string, string>
}) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("listings-proc")
    const sourcesFile = path.join(dir, "sources.json")
    yield* Effect.promise(() => fs.writeFile(sourcesFile, JSON.stringify({ sources: options.sources })))
    const port = yield* Effect.orDie(freePort())
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [MAIN], {
          env: {
            ...process.env,
            NODE_ENV: "production",
            DATABASE_URL: options.databaseUrl,
            LISTINGS_PORT: String(port),
            SOURCES_FILE: sourcesFile,
            INGEST_ON_START: "false",
            OFFER_IMAGES_STORAGE: "off",
            LISTINGS_ALLOW_PRIVATE: "true", // the test feeds are on 127.0.0.1
            ...options.env
          },
          stdio: ["ignore", "pipe", "pipe"]
        })
      ),
      (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
    )
    let output = ""
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    const exited = new Promise<number | string>((resolve) =>
      child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown"))
    )
    yield* acceptsConnections(port).pipe(
      Effect.filterOrFail((ok) => ok, () => new Error("not yet")),
      Effect.retry(Schedule.spaced("100 millis")),
      Effect.timeoutOrElse({
        duration: "30 seconds",
        orElse: () => Effect.die(new Error(`listings process did not start:\n${output}`))
      })
    )
    return { port, baseUrl: `http://127.0.0.1:${port}`, child, output: () => output, exited } satisfies ServiceProcess
  })

/** A SQL client on `url` for the scope. */
export const sqlOn = (url: string) =>
  PgClient.make({ url: Redacted.make(url), maxConnections: 2 }).pipe(Effect.provide(Reactivity.layer))

/**
 * A JSON feed server: `/feed/<name>?pages=N&delay=MS` answers N pages of 2 offers, each page after
 * MS milliseconds, linked by `next`. `/hang` never answers. Counts the first-page requests per name.
 */
export const slowFeedServer = Effect.gen(function*() {
  const firstPages = new Map<string, number>()
  const base = yield* httpServer((req: Http.IncomingMessage, res: Http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://feed")
    if (url.pathname === "/hang") return // never answers
    const match = /^\/feed\/([a-z0-9-]+)$/.exec(url.pathname)
    if (match === null) {
      res.writeHead(404)
      return res.end()
    }
    const name = match[1]!
    const page = Number(url.searchParams.get("page") ?? "1")
    const pages = Number(url.searchParams.get("pages") ?? "1")
    const delay = Number(url.searchParams.get("delay") ?? "0")
    if (page === 1) firstPages.set(name, (firstPages.get(name) ?? 0) + 1)
    const offer = (n: number) => ({
      id: `${name}-${n}`,
      title: `Skoda Octavia ${name} ${n}`,
      make: "Skoda",
      model: "Octavia",
      price: 40_000 + n,
      currency: "PLN",
      fuel: "diesel",
      transmission: "manual",
      region: "mazowieckie",
      originalUrl: `https://feed.example/${name}/${n}`,
      year: 2016,
      mileage: 150_000 + n
    })
    const next = page < pages
      ? `/feed/${name}?page=${page + 1}&pages=${pages}&delay=${delay}`
      : null
    const timer = setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ offers: [offer(page * 2 - 1), offer(page * 2)], next }))
    }, delay)
    res.on("close", () => clearTimeout(timer))
  })
  return {
    base,
    /** a source reading `pages` pages, one every `delay` ms */
    source: (id: string, pages: number, delay: number): SourceConfig => ({
      id,
      adapter: "json",
      url: `${base}/feed/${id}?page=1&pages=${pages}&delay=${delay}`,
      nextPagePath: "next"
    }),
    firstPages: (name: string) => firstPages.get(name) ?? 0
  }
})

export const waitFor = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  until: (a: A) => boolean,
  what: string,
  timeoutMs = 20_000
) =>
  check.pipe(
    Effect.filterOrFail(until, () => new Error(`still waiting for ${what}`)),
    Effect.retry(Schedule.spaced("100 millis")),
    Effect.timeoutOrElse({
      duration: timeoutMs,
      orElse: () => Effect.die(new Error(`timed out waiting for ${what}`))
    })
  )
