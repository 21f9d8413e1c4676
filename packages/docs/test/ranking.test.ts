/**
 * The Postgres ranking of a context answer (src/ranking/Bm25.ts) on crafted documents, where each claim
 * is what decides the order: the rules the held-out evaluation (scripts/bench/docs-evaluate.ts) measured.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
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

layer(stack, { timeout: 60_000 })("context ranking on Postgres", (it) => {
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
