/**
 * OpenAPI documents as a source on a real database: a YAML file and a JSON URL on 127.0.0.1, one
 * snippet per operation (method, path, summary, description, parameters with `$ref`s resolved, the
 * request example when the document has one), documents that are not OpenAPI 3, and crafted ones whose
 * `$ref`s and YAML aliases make a few MB stand for billions of values.
 */
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Result } from "effect"
import { SqlClient } from "effect/sql"
import { Indexer } from "../src/Indexer.ts"
import { MAX_SNIPPET_CHARS } from "../src/Splitter.ts"
import { MAX_OPERATIONS } from "../src/sources/OpenApiDocument.ts"
import type { IndexFailed } from "../src/sources/Source.ts"
import { docsFolder, stack } from "./support.ts"
import { siteServer } from "./web/SiteServer.ts"

const allowed = Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DOCS_ALLOW_PRIVATE: "true" })))

const failureOf = <A>(effect: Effect.Effect<A, IndexFailed>) =>
  Effect.map(Effect.result(effect), (result) => {
    if (Result.isSuccess(result)) throw new Error("expected a failure, the run succeeded")
    return result.failure
  })

const PETSTORE = `openapi: 3.0.3
info:
  title: Pet Store
  version: 1.4.0
  description: |
    Pets to adopt.

    More text.
paths:
  /pets/{petId}:
    parameters:
      - $ref: '#/components/parameters/PetId'
    get:
      operationId: getPet
      summary: Get a pet
      tags: [pets]
      parameters:
        - name: fields
          in: query
          description: Fields to return
          schema: { type: array, items: { type: string } }
      responses: { "200": { description: ok } }
    delete:
      tags: [pets]
      responses: { "204": { description: gone } }
  /pets:
    post:
      operationId: createPet
      summary: Add a pet
      description: Registers a pet for adoption.
      requestBody:
        description: The pet
        content:
          application/json:
            schema: { $ref: '#/components/schemas/Pet' }
            examples:
              rex: { value: { name: Rex, kind: dog } }
      responses: { "201": { description: created } }
components:
  parameters:
    PetId: { name: petId, in: path, required: true, description: The pet's id, schema: { type: integer, format: int64 } }
  schemas:
    Pet: { type: object, properties: { name: { type: string } } }
`

const snippetsOf = (libraryId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ title: string; heading_path: Array<string>; description: string; body: string; language: string; source_path: string; kind: string }>`
      SELECT s.title, s.heading_path, s.description, s.body, s.language, s.source_path, s.kind
      FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
      WHERE v.library_id = ${libraryId} ORDER BY s.ordinal`
  })

const sourceUrlsOf = (libraryId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ source_url: string | null }>`
      SELECT s.source_url FROM docs.snippets s JOIN docs.versions v ON v.generation_id = s.generation_id
      WHERE v.library_id = ${libraryId} ORDER BY s.ordinal`
    return rows.map((row) => row.source_url)
  })

layer(stack)("OpenAPI sources", (it) => {
  it.effect("a YAML file: one snippet per operation, parameters resolved, the request example", () =>
    Effect.gen(function*() {
      const dir = yield* docsFolder({ "petstore.yaml": PETSTORE })
      const indexer = yield* Indexer
      const outcome = yield* indexer.add(`${dir}/petstore.yaml`)
      assert.deepStrictEqual([outcome.libraryId, outcome.version, outcome.files, outcome.snippets], ["/openapi/pet-store", "1.4.0", 1, 3])
      const [getPet, deletePet, createPet] = yield* snippetsOf(outcome.libraryId)

      assert.strictEqual(getPet!.title, "Get a pet")
      assert.deepStrictEqual(getPet!.heading_path, ["Pet Store", "pets", "Get a pet"])
      assert.strictEqual(getPet!.source_path, "petstore.yaml#getPet")
      assert.strictEqual(getPet!.body, "GET /pets/{petId}")
      assert.strictEqual(getPet!.language, "http")
      assert.include(getPet!.description, "`GET /pets/{petId}`")
      assert.include(getPet!.description, "- `petId` (path, integer (int64), required): The pet's id")
      assert.include(getPet!.description, "- `fields` (query, array of string): Fields to return")

      // its Source: line is the file's absolute path, as a folder's files have (was `petstore.yaml#getPet`)
      assert.deepStrictEqual(yield* sourceUrlsOf(outcome.libraryId), [`${dir}/petstore.yaml`, `${dir}/petstore.yaml`, `${dir}/petstore.yaml`])

      assert.strictEqual(deletePet!.title, "DELETE /pets/{petId}")
      assert.strictEqual(deletePet!.source_path, "petstore.yaml#DELETE /pets/{petId}")

      assert.strictEqual(createPet!.body, `POST /pets\nContent-Type: application/json\n\n{\n  "name": "Rex",\n  "kind": "dog"\n}`)
      assert.include(createPet!.description, "Registers a pet for adoption.")
      assert.include(createPet!.description, "Request body: The pet")

      const library = (yield* indexer.list).find((l) => l.id === "/openapi/pet-store")!
      assert.strictEqual(library.title, "Pet Store")
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ description: string; source_kind: string }>`SELECT description, source_kind FROM docs.libraries WHERE id = '/openapi/pet-store'`
      assert.deepStrictEqual(row, { description: "Pets to adopt.", source_kind: "openapi" })
    }))

  it.effect("a JSON URL through the outbound guard, refreshed from it; refused without DOCS_ALLOW_PRIVATE", () =>
    Effect.gen(function*() {
      const spec = (summary: string) =>
        JSON.stringify({
          openapi: "3.1.0",
          info: { title: "Tiny", version: "2" },
          paths: { "/ping": { get: { summary, responses: {} } } }
        })
      const site = yield* siteServer({ "/api/openapi.json": { type: "application/json", body: spec("Ping the server") } })
      const indexer = yield* Indexer
      const refused = yield* failureOf(indexer.add(`${site.base}/api/openapi.json`))
      assert.strictEqual(refused.category, "source_not_allowed")
      assert.deepStrictEqual(site.requested, [])

      const outcome = yield* indexer.add(`${site.base}/api/openapi.json`, { id: "/acme/tiny", title: "Tiny API" }).pipe(allowed)
      assert.deepStrictEqual([outcome.libraryId, outcome.version, outcome.snippets], ["/acme/tiny", "2", 1])
      assert.strictEqual((yield* indexer.list).find((library) => library.id === "/acme/tiny")!.title, "Tiny API", "--title wins")
      assert.strictEqual((yield* snippetsOf("/acme/tiny"))[0]!.title, "Ping the server")
      // its Source: line is the document's URL, which an agent can open (was `openapi.json#GET /ping`)
      assert.strictEqual((yield* sourceUrlsOf("/acme/tiny"))[0], `${site.base}/api/openapi.json`)

      site.set({ "/api/openapi.json": { type: "application/json", body: spec("Check the server is up") } })
      yield* indexer.refresh("/acme/tiny").pipe(allowed)
      assert.strictEqual((yield* snippetsOf("/acme/tiny"))[0]!.title, "Check the server is up")
    }))

  it.effect("not OpenAPI 3: the field named, Swagger 2 said so, nothing stored", () =>
    Effect.gen(function*() {
      const dir = yield* docsFolder({
        "swagger.json": JSON.stringify({ swagger: "2.0", info: { title: "Old", version: "1" }, paths: {} }),
        "notitle.yaml": "openapi: 3.0.0\ninfo: { version: '1' }\npaths: {}\n",
        "v4.yaml": "openapi: 4.0.0\ninfo: { title: T, version: '1' }\npaths: {}\n",
        "empty.yaml": "openapi: 3.0.0\ninfo: { title: Empty, version: '1' }\npaths: {}\n",
        "broken.yaml": "openapi: [unclosed\n"
      })
      const indexer = yield* Indexer
      const swagger = yield* failureOf(indexer.add(`${dir}/swagger.json`))
      assert.strictEqual(swagger.category, "invalid_source")
      assert.include(swagger.message, "is Swagger 2.0, not OpenAPI 3")
      const noTitle = yield* failureOf(indexer.add(`${dir}/notitle.yaml`))
      assert.strictEqual(noTitle.category, "invalid_source")
      assert.strictEqual(noTitle.message, `${dir}/notitle.yaml is not an OpenAPI 3 document: Missing key at ["info"]["title"]`)
      const v4 = yield* failureOf(indexer.add(`${dir}/v4.yaml`))
      assert.include(v4.message, "openapi")
      assert.include(v4.message, `must be "3.x"`)
      const empty = yield* failureOf(indexer.add(`${dir}/empty.yaml`))
      assert.strictEqual(empty.category, "no_documents")
      const broken = yield* failureOf(indexer.add(`${dir}/broken.yaml`))
      assert.strictEqual(broken.category, "invalid_source")
      assert.include(broken.message, "is not JSON or YAML")
      assert.isFalse((yield* indexer.list).some((library) => ["/openapi/old", "/openapi/t", "/openapi/empty"].includes(library.id)))
    }))

  it.effect("crafted documents read in bounded time and memory: an alias bomb as an example, a shared 50,000-parameter list, a shared huge path item", () =>
    Effect.gen(function*() {
      // nine levels of nine aliases: 387 million values once printed
      let bomb = "openapi: 3.0.0\ninfo: {title: Bomb, version: '1'}\nx-a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
      for (let i = 1; i < 9; i++) bomb += `x-a${i}: &a${i} [${Array(9).fill(`*a${i - 1}`).join(", ")}]\n`
      bomb += "paths:\n  /x:\n    post:\n      summary: Post x\n      requestBody:\n        content:\n          application/json:\n            example: *a8\n"
      // one list of 50,000 parameters under every operation (before the bounds: gigabytes, then out of memory)
      let params = "openapi: 3.0.0\ninfo: {title: Params, version: '1'}\nx-p: &p\n"
      for (let i = 0; i < 50_000; i++) params += `  - {name: p${i}, in: query, description: the parameter number ${i}}\n`
      params += "paths:\n"
      for (let i = 0; i < 2_000; i++) params += `  /op${i}: {get: {summary: Op ${i}, parameters: *p}}\n`
      // JSON too: every path item is one $ref to an item whose texts are megabytes
      const huge = "word ".repeat(300_000)
      const shared = JSON.stringify({
        openapi: "3.0.0",
        info: { title: `Shared ${huge}`, version: "1", description: huge },
        "x-item": { get: { summary: huge, operationId: huge, tags: [huge], description: huge } },
        paths: Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`/op${i}`, { $ref: "#/x-item" }]))
      })
      const dir = yield* docsFolder({ "bomb.yaml": bomb, "params.yaml": params, "shared.json": shared })
      const indexer = yield* Indexer
      const started = performance.now()
      const bombed = yield* indexer.add(`${dir}/bomb.yaml`, { id: "/crafted/bomb" })
      const listed = yield* indexer.add(`${dir}/params.yaml`, { id: "/crafted/params" })
      const sharing = yield* indexer.add(`${dir}/shared.json`, { id: "/crafted/shared" })
      assert.isBelow(performance.now() - started, 60_000)
      assert.deepStrictEqual([bombed.snippets, listed.snippets, sharing.snippets], [1, 2_000, 2_000])

      const [post] = yield* snippetsOf("/crafted/bomb")
      assert.strictEqual(post!.body, "POST /x", "an example too large to show is left out")
      const operations = [...yield* snippetsOf("/crafted/params"), ...yield* snippetsOf("/crafted/shared")]
      for (const snippet of operations) {
        assert.isAtMost(snippet.title.length + snippet.description.length + snippet.body.length, MAX_SNIPPET_CHARS)
        assert.isAtMost(snippet.heading_path.join("").length, 600)
      }
      const sql = yield* SqlClient.SqlClient
      const [library] = yield* sql<{ title: string; description: string }>`SELECT title, description FROM docs.libraries WHERE id = '/crafted/shared'`
      assert.deepStrictEqual([library!.title.length, library!.description.length], [200, 500])
      const first = operations[0]!.description
      assert.include(first, "- `p0` (query): the parameter number 0")
      assert.notInclude(first, "`p100`", "at most 100 parameters an operation")
    }))

  it.effect("DOCS_MAX_SNIPPETS and MAX_OPERATIONS bound a document's operations and a folder's snippets: past them the add fails and stores no snippet", () =>
    Effect.gen(function*() {
      const operations = (n: number) =>
        JSON.stringify({
          openapi: "3.0.0",
          info: { title: "Many", version: "1" },
          paths: Object.fromEntries(Array.from({ length: n }, (_, i) => [`/op${i}`, { get: { summary: `Operation ${i}`, responses: {} } }]))
        })
      const dir = yield* docsFolder({
        "many.json": operations(7),
        "few.json": operations(5),
        "docs/README.md": Array.from({ length: 7 }, (_, i) => `## Part ${i}

The text of part ${i}, which is long enough to be a snippet of its own.
`).join("\n")
      })
      const indexer = yield* Indexer
      const capped = Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DOCS_MAX_SNIPPETS: "5" })))
      const many = yield* failureOf(indexer.add(`${dir}/many.json`, { id: "/cap/many" }).pipe(capped))
      assert.strictEqual(many.category, "read_failed")
      assert.strictEqual(many.message, `${dir}/many.json holds more than 5 snippets (DOCS_MAX_SNIPPETS): leave folders out with a svc.json (folders, exclude) or raise the setting`)
      const few = yield* indexer.add(`${dir}/few.json`, { id: "/cap/few" }).pipe(capped)
      assert.strictEqual(few.snippets, 5)
      const folder = yield* failureOf(indexer.add(`${dir}/docs`, { id: "/cap/folder" }).pipe(capped))
      assert.include(folder.message, "holds more than 5 snippets (DOCS_MAX_SNIPPETS)")
      // past MAX_OPERATIONS whatever the setting: $refs make a small document's operations large
      const huge = yield* docsFolder({ "huge.json": operations(MAX_OPERATIONS + 1) })
      const tooMany = yield* failureOf(indexer.add(`${huge}/huge.json`, { id: "/cap/huge" }))
      assert.strictEqual(tooMany.message, `${huge}/huge.json describes more than ${MAX_OPERATIONS} operations, the most an OpenAPI document is read for`)
      const zero = yield* failureOf(indexer.add(`${dir}/few.json`, { id: "/cap/zero" }).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DOCS_MAX_SNIPPETS: "0" })))
      ))
      assert.strictEqual(zero.message, `invalid configuration: Expected a value greater than or equal to 1 at ["DOCS_MAX_SNIPPETS"]`)
      // a folder's failure is known once it is read: its version is recorded failed, with no snippet
      const libraries = (yield* indexer.list).filter((library) => library.id.startsWith("/cap/"))
      assert.deepStrictEqual(libraries.map((library) => [library.id, library.versions.map((v) => v.state)]), [["/cap/few", ["ready"]], ["/cap/folder", ["failed"]]])
      assert.deepStrictEqual(yield* snippetsOf("/cap/folder"), [])
    }))
})

