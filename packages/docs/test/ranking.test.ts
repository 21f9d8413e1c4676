/**
 * The Postgres ranking of a context answer (src/ranking/Bm25.ts) on crafted documents, where each claim
 * is what decides the order: the rules the held-out evaluation (scripts/bench/docs-evaluate.ts) measured.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { Indexer } from "../src/Indexer.ts"
import { type ContextAnswer, Search } from "../src/Search.ts"
import { docsFolder, stack } from "./support.ts"

const options = `# Options

## followRedirect

Type: boolean. Default: true.

Whether responses that point elsewhere are acted upon automatically, with the same method and body
where the status allows it and a GET otherwise, up to the maximum number of hops.

## HTTPError

Thrown for an error status. To follow redirects yourself: follow a redirect's location, follow redirects.

## http2

Type: boolean. Default: false.

Whether to use the newer protocol when the server offers it over TLS.

## Protocol versions

The HTTP version of a response is in its httpVersion field, as the server sent it: 1.0, 1.1 or 2.
Servers that only speak HTTP answer the first request of a connection with the version they chose.

## timeout

Type: number. How long to wait for the server, in milliseconds.
`

/** The answer's section titles in the order they are read (one entry per file, its sections best first). */
const titles = (answer: ContextAnswer) =>
  answer._tag === "Found" ? answer.snippets.flatMap((entry) => (entry.sections ?? [entry]).map((section) => section.title)) : []

/**
 * A library where a common-word question matches most sections (as "route", "request" and "reply" do in
 * fastify's docs): 8 files of 30 sections each, every one with the common words and a word of its own.
 */
const commonWords = Object.fromEntries(Array.from({ length: 8 }, (_, file) => [
  `guide-${file}.md`,
  `# Guide ${file}\n\n` + Array.from({ length: 30 }, (_, section) =>
    `## Section w${file}x${section}\n\nA route answers each request with a reply; its options say how ` +
    `(w${file}x${section} ${section % 3 === 0 ? "schema" : "hook"}).\n`).join("\n")
]))

/** An SQL literal of a statement's parameter (the ranking's are strings, numbers and nulls). */
const literal = (value: unknown) =>
  value === null ? "NULL" : typeof value === "number" ? String(value) : `'${String(value).replaceAll("'", "''")}'`

layer(stack, { timeout: 60_000 })("context ranking on Postgres", (it) => {
  it.effect("the generic plan Postgres caches after five executions answers the same and joins nothing by estimate", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* (yield* Indexer).add(yield* docsFolder(commonWords), { id: "/acme/routes", version: "1.0.0" })
      const question = { libraryId: "/acme/routes", query: "add a route schema with options for the request and the reply" }
      const statements: Array<readonly [string, ReadonlyArray<unknown>]> = []
      const answer = yield* (yield* Search).context(question).pipe(
        Effect.provideService(Statement.CurrentTransformer, (statement) => {
          statements.push(statement.compile())
          return Effect.succeed(statement)
        })
      )
      assert.isTrue(answer._tag === "Found" && answer.snippets.length > 0)
      const [text, values] = statements.find(([text]) => text.includes("unnest"))!
      const generic = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`SET LOCAL plan_cache_mode = force_generic_plan`
        const again = yield* (yield* Search).context(question)
        yield* sql.unsafe(`PREPARE ranking AS ${text}`)
        const plan = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE ranking(${values.map(literal).join(", ")})`)
        yield* sql`DEALLOCATE ranking`
        return { again, plan: plan.map((row) => row["QUERY PLAN"]).join("\n") }
      }))
      assert.deepStrictEqual(generic.again, answer)
      // the plan is generic (no value of the question in it) and holds no join with a filter: the one that
      // cost 85 ms on fastify's docs compared every term hit with every matched snippet
      assert.include(generic.plan, "$")
      assert.notInclude(generic.plan, "Join Filter")
    }))

  it.effect("a heading naming what is asked comes before a section that only repeats the question's words", () =>
    Effect.gen(function*() {
      yield* (yield* Indexer).add(yield* docsFolder({ "options.md": options }), { id: "/acme/client", version: "1.0.0" })
      const answer = yield* (yield* Search).context({ libraryId: "/acme/client", query: "do not follow redirects" })
      // HTTPError's text holds "follow" and "redirect" three times each; followRedirect's only in its heading
      assert.deepStrictEqual(titles(answer).slice(0, 2), ["followRedirect", "HTTPError"])
    }))

  it.effect("a version number written apart in the question finds the identifier that joins it", () =>
    Effect.gen(function*() {
      yield* (yield* Indexer).add(yield* docsFolder({ "options.md": options }), { id: "/acme/client2", version: "1.0.0" })
      const answer = yield* (yield* Search).context({ libraryId: "/acme/client2", query: "enable HTTP/2" })
      assert.strictEqual(titles(answer)[0], "http2")
    }))
})
