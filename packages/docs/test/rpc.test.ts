/**
 * Folder sources over the docs RPC (`svc docs add` with `DOCS_URL`): only under `DOCS_SOURCE_ROOTS`,
 * real paths compared (symlinks resolved), none by default; the server's own `/etc` is never indexed.
 * The local indexer (no RPC) is unaffected. A body declared in a charset other than UTF-8 is 415 and
 * adds nothing. An add that waits for another run of its version tells its caller. A real docs-api on
 * a socket, the real RPC client.
 */
import { assert, layer } from "@effect/vitest"
import { tempDir } from "@svc/platform/testing"
import type { IndexEvent } from "@svc/schema"
import { ConfigProvider, Context, Deferred, Effect, Fiber, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Indexer } from "../src/Indexer.ts"
import { operations } from "../src/RpcClient.ts"
import { Client, docsFolder, get, socketClientWith, stack, waitFor } from "./support.ts"

const TOKEN = "rpc-test-token"

const readme = (title: string) => ({
  "README.md": `# ${title}\n\nHow to configure the ${title.toLowerCase()} widgets: options, themes, layouts and the rest of it.\n`
})

/** A docs-api with `env` (and the admin token); the RPC operations against it. */
const remote = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const api = Context.get(yield* Layer.build(socketClientWith({ DOCS_ADMIN_TOKEN: TOKEN, ...env })), Client)
    return { api, ops: operations({ url: api.baseUrl, token: Redacted.make(TOKEN) }) }
  })

/** The tag of the last event of a successful AddLibrary over the RPC (`Done`). */
const added = (ops: ReturnType<typeof operations>, source: string, id?: string) =>
  ops.add({ source, ...(id === undefined ? {} : { id }) }, () => Effect.void).pipe(
    Effect.map((last) => Option.match(last, { onNone: () => "nothing", onSome: (event) => event._tag }))
  )

/** The failure of an AddLibrary over the RPC (the test fails if it succeeds). */
const refusal = (ops: ReturnType<typeof operations>, source: string, id?: string) =>
  ops.add({ source, ...(id === undefined ? {} : { id }) }, () => Effect.void).pipe(
    Effect.flip,
    Effect.map((error) => error as { readonly _tag: string; readonly category?: string; readonly message: string })
  )

layer(stack, { timeout: 120_000 })("folder sources over the docs RPC", (it) => {
  it.effect("without DOCS_SOURCE_ROOTS: no folder or local git source (the server's /etc least of all); npm packages still", () =>
    Effect.gen(function*() {
      const { api, ops } = yield* remote({})
      const folder = yield* docsFolder(readme("Private"))
      const etcRelative = path.relative(process.cwd(), "/etc")
      for (const source of ["../../../../etc", etcRelative, "/etc", folder, `file://${folder}`, `${folder}#main`]) {
        const error = yield* refusal(ops, source, "/evil/etc")
        assert.strictEqual(error._tag, "IndexingFailed", source)
        assert.strictEqual(error.category, "source_not_allowed", source)
        assert.match(error.message, /not accepted over the RPC: the server has no DOCS_SOURCE_ROOTS/, source)
      }
      // nothing was registered, nothing is served
      const libraries = yield* ops.list
      assert.isFalse(libraries.some((library) => library.id === "/evil/etc"))
      const search = yield* get("/api/v2/libs/search?libraryName=etc").pipe(Effect.provideService(Client, api))
      assert.deepStrictEqual(search.body.results, [])
      // a URL no source reads is said so, not taken for a folder
      const gopher = yield* refusal(ops, "gopher://127.0.0.1:9799/", "/evil/gopher")
      assert.deepStrictEqual([gopher.category, gopher.message], [
        "invalid_source",
        "gopher:// is not a source: give a folder, a git URL (https, ssh, git, file), a website or OpenAPI document (http, https) or npm:<package>"
      ])
      // not a folder: unaffected
      assert.strictEqual(yield* added(ops, "npm:he"), "Done")
    }).pipe(Effect.scoped))

  it.effect("with DOCS_SOURCE_ROOTS: folders under a root are indexed; outside, via .., via a symlink: refused", () =>
    Effect.gen(function*() {
      const base = yield* tempDir("svc-roots-")
      const rootA = path.join(base, "a")
      const rootB = path.join(base, "b")
      const outside = path.join(base, "outside")
      yield* Effect.promise(async () => {
        for (const dir of [path.join(rootA, "widgets"), rootB, outside]) await fs.mkdir(dir, { recursive: true })
        await fs.writeFile(path.join(rootA, "widgets", "README.md"), readme("Widgets")["README.md"])
        await fs.writeFile(path.join(outside, "README.md"), readme("Secret")["README.md"])
        await fs.writeFile(
          path.join(outside, "openapi.json"),
          JSON.stringify({ openapi: "3.1.0", info: { title: "Secret API", version: "1" }, paths: { "/key": { get: { summary: "The secret key" } } } })
        )
        // a symlink inside a root to a folder outside every root
        await fs.symlink(outside, path.join(rootA, "escape"))
        // a root reached through a symlink: its real path is what counts
        await fs.symlink(rootB, path.join(base, "b-link"))
        await fs.mkdir(path.join(rootB, "gadgets"))
        await fs.writeFile(path.join(rootB, "gadgets", "README.md"), readme("Gadgets")["README.md"])
        await fs.writeFile(path.join(rootB, "gadgets", "svc.json"), JSON.stringify({ rules: ["Charge a gadget before use"] }))
      })
      const { ops } = yield* remote({ DOCS_SOURCE_ROOTS: [rootA, path.join(base, "b-link")].join(path.delimiter) })

      assert.strictEqual(yield* added(ops, path.join(rootA, "widgets"), "/acme/widgets"), "Done")
      assert.strictEqual(yield* added(ops, path.join(rootB, "gadgets"), "/acme/gadgets"), "Done")

      for (
        const source of [
          outside,
          path.join(rootA, "..", "outside"),
          path.join(rootA, "escape"),
          `file://${path.join(rootA, "escape")}`,
          "/etc",
          "../../../../etc",
          path.join(base, "missing-outside")
        ]
      ) {
        const error = yield* refusal(ops, source, "/evil/secret")
        assert.strictEqual(error.category, "source_not_allowed", source)
        assert.match(error.message, /outside the folders the server accepts sources from \(DOCS_SOURCE_ROOTS\)/, source)
      }
      // a clone URL whose path climbs to a file outside the roots is a clone URL (refused on its host, which
      // does not resolve), never that file read as an OpenAPI document; a missing file answers the same (no oracle)
      const climb = "../".repeat(20)
      for (const file of [path.join(outside, "openapi.json"), path.join(outside, "missing.json")]) {
        for (const disguise of [`git@x.invalid:${climb}${file}`, `ssh://x.invalid/${climb}${file}`, `git://x.invalid/${climb}${file}`]) {
          const error = yield* refusal(ops, disguise, "/evil/api")
          assert.strictEqual(error.category, "source_not_allowed", disguise)
          assert.match(error.message, /^Refused to reach .*x\.invalid/, disguise)
          assert.notInclude(error.message, "OpenAPI", disguise)
        }
      }
      // missing under a root: said so
      const missing = yield* refusal(ops, path.join(rootA, "nope"))
      assert.strictEqual(missing.category, "source_not_found")

      const listed = yield* ops.list
      const ids = listed.map((library) => library.id)
      assert.includeMembers(ids, ["/acme/widgets", "/acme/gadgets"])
      // svc.json's rules travel with the listing (`svc docs list` prints them)
      assert.deepStrictEqual(listed.find((library) => library.id === "/acme/gadgets")?.rules, ["Charge a gadget before use"])
      assert.deepStrictEqual(listed.find((library) => library.id === "/acme/widgets")?.rules, [])
      assert.notInclude(ids, "/evil/secret")
      assert.notInclude(ids, "/evil/api")
    }).pipe(Effect.scoped))

  it.effect("a svc.json or package.json that is a link out of the source is not read; a folder replaced by a link out of the roots is refused on refresh", () =>
    Effect.gen(function*() {
      const base = yield* tempDir("svc-roots-links-")
      const root = path.join(base, "root")
      const outside = path.join(base, "outside")
      yield* Effect.promise(async () => {
        for (const dir of [path.join(root, "linked-config"), path.join(root, "linked-package"), path.join(root, "swapped"), outside]) {
          await fs.mkdir(dir, { recursive: true })
        }
        await fs.writeFile(path.join(outside, "svc.json"), JSON.stringify({ title: "SECRET title", rules: ["SECRET rule"] }))
        await fs.writeFile(path.join(outside, "package.json"), JSON.stringify({ name: "secret-package", version: "6.6.6" }))
        await fs.writeFile(path.join(outside, "README.md"), readme("Secret")["README.md"])
        await fs.writeFile(
          path.join(outside, "openapi.json"),
          JSON.stringify({ openapi: "3.1.0", info: { title: "Secret API", version: "1" }, paths: { "/key": { get: { summary: "The secret key" } } } })
        )
        for (const folder of ["linked-config", "linked-package", "swapped"]) {
          await fs.writeFile(path.join(root, folder, "README.md"), readme("Widgets")["README.md"])
        }
        await fs.symlink(path.join(outside, "svc.json"), path.join(root, "linked-config", "svc.json"))
        await fs.symlink(path.join(outside, "package.json"), path.join(root, "linked-package", "package.json"))
      })
      const { ops } = yield* remote({ DOCS_SOURCE_ROOTS: root })

      // svc.json through a link: refused, naming the file, whether its target exists or not
      const config = yield* refusal(ops, path.join(root, "linked-config"), "/acme/linked-config")
      assert.strictEqual(config.category, "invalid_source")
      assert.match(config.message, /svc\.json of .*: is a link that leads out of the source/)
      yield* Effect.promise(() => fs.rm(path.join(outside, "svc.json")))
      const dangling = yield* refusal(ops, path.join(root, "linked-config"), "/acme/linked-config")
      assert.strictEqual(dangling.message, config.message)
      // package.json through a link: as if there were none (no title, version or id from it)
      assert.strictEqual(yield* added(ops, path.join(root, "linked-package"), "/acme/linked-package"), "Done")
      const listed = yield* ops.list
      const linkedPackage = listed.find((library) => library.id === "/acme/linked-package")
      assert.notInclude(JSON.stringify(linkedPackage), "secret-package")
      assert.notInclude(JSON.stringify(linkedPackage), "6.6.6")
      assert.isFalse(JSON.stringify(listed).includes("SECRET"))

      // added while a folder, then swapped for a link out of the roots: the refresh is refused, nothing read
      assert.strictEqual(yield* added(ops, path.join(root, "swapped"), "/acme/swapped"), "Done")
      yield* Effect.promise(async () => {
        await fs.rm(path.join(root, "swapped"), { recursive: true })
        await fs.symlink(outside, path.join(root, "swapped"))
      })
      const refreshed = (yield* ops.refresh("/acme/swapped", () => Effect.void).pipe(Effect.flip)) as {
        readonly category?: string
        readonly message: string
      }
      assert.strictEqual(refreshed.category, "source_not_allowed")
      assert.match(refreshed.message, /outside the folders the server accepts sources from \(DOCS_SOURCE_ROOTS\)/)
      const context = yield* remote({ DOCS_SOURCE_ROOTS: root }).pipe(Effect.flatMap(({ api }) =>
        get("/api/v2/context?libraryId=/acme/swapped&query=secret&type=json").pipe(Effect.provideService(Client, api))
      ))
      assert.notInclude(JSON.stringify(context.body), "Secret")
    }).pipe(Effect.scoped))

  it.effect("a remote caller's version whose run was cut short is resumed under the roots: a folder swapped for a link out of them is refused; a local add's is read as before", () =>
    Effect.gen(function*() {
      const base = yield* tempDir("svc-roots-resume-")
      const root = path.join(base, "root")
      const outside = path.join(base, "outside")
      const local = path.join(base, "local")
      yield* Effect.promise(async () => {
        for (const dir of [path.join(root, "killed"), outside, local]) await fs.mkdir(dir, { recursive: true })
        await fs.writeFile(path.join(root, "killed", "README.md"), readme("Widgets")["README.md"])
        await fs.writeFile(path.join(outside, "README.md"), readme("Secret")["README.md"])
        await fs.writeFile(path.join(local, "README.md"), readme("Gadgets")["README.md"])
      })
      const { ops } = yield* remote({ DOCS_SOURCE_ROOTS: root })
      const indexer = yield* Indexer
      const sql = yield* SqlClient.SqlClient
      assert.strictEqual(yield* added(ops, path.join(root, "killed"), "/acme/killed"), "Done")
      yield* indexer.add(local, { id: "/acme/local" })
      // both runs cut short (a killed docs-api leaves its version to the next start's resume), and the
      // remote one's folder swapped for a link out of the roots meanwhile
      yield* sql`UPDATE docs.versions SET state = 'queued' WHERE library_id IN ('/acme/killed', '/acme/local')`
      yield* Effect.promise(async () => {
        await fs.rm(path.join(root, "killed"), { recursive: true })
        await fs.symlink(outside, path.join(root, "killed"))
      })
      const versionOf = (id: string) =>
        Effect.map(ops.list, (libraries) => `${id}/${libraries.find((library) => library.id === id)!.versions[0]!.version}`)
      const withRoots = Effect.provide(ConfigProvider.layerAdd(ConfigProvider.fromEnvRecord({ DOCS_SOURCE_ROOTS: root }), { asPrimary: true }))
      const refused = yield* indexer.resume(yield* versionOf("/acme/killed")).pipe(withRoots, Effect.flip)
      assert.strictEqual(refused._tag, "IndexFailed")
      assert.strictEqual((refused as { readonly category?: string }).category, "source_not_allowed")
      assert.match(refused.message, /outside the folders the server accepts sources from \(DOCS_SOURCE_ROOTS\)/)
      // the local add (the operator's own `svc docs add`) is read wherever it is, as it was added
      const resumed = yield* indexer.resume(yield* versionOf("/acme/local")).pipe(withRoots)
      assert.isTrue(Option.isSome(resumed))
      const states = new Map((yield* ops.list).map((library) => [library.id, library.versions[0]!.state]))
      assert.strictEqual(states.get("/acme/killed"), "failed")
      assert.strictEqual(states.get("/acme/local"), "ready")
      const context = yield* remote({ DOCS_SOURCE_ROOTS: root }).pipe(Effect.flatMap(({ api }) =>
        get("/api/v2/context?libraryId=/acme/killed&query=secret&type=json").pipe(Effect.provideService(Client, api))
      ))
      assert.notInclude(JSON.stringify(context.body), "Secret")
    }).pipe(Effect.scoped))

  it.effect("a body declared in a charset other than UTF-8 is 415 naming it and adds nothing; charset=utf-8 (any case, quoted) as before", () =>
    Effect.gen(function*() {
      const { api, ops } = yield* remote({})
      const line = (id: string) =>
        `${JSON.stringify({ _tag: "Request", id: "1", tag: "AddLibrary", payload: { source: "npm:he", id }, headers: [] })}\n`
      const post = (body: string | Uint8Array, charset: string) =>
        api.fetch("/rpc", {
          method: "POST",
          body: body as BodyInit,
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": `application/ndjson; charset=${charset}` }
        }).pipe(Effect.flatMap((response) => Effect.promise(async () => ({ status: response.status, text: await response.text() }))))
      // the line in UTF-16LE with a byte order mark, as a client that meant its charset sends it
      const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(line("/charset/refused"), "utf16le")])
      for (const charset of ["utf-16", "iso-8859-1", "shift_jis"]) {
        const refused = yield* post(utf16, charset)
        assert.strictEqual(refused.status, 415, refused.text)
        const body = JSON.parse(refused.text)
        assert.strictEqual(body.code, "unsupported_media_type")
        assert.include(body.message, `charset "${charset}" is not supported: send the JSON body as UTF-8`)
      }
      assert.isFalse((yield* ops.list).some((library) => library.id === "/charset/refused"))
      for (const [charset, id] of [["UTF-8", "/charset/upper"], ["\"utf-8\"", "/charset/quoted"]] as const) {
        const read = yield* post(line(id), charset)
        assert.strictEqual(read.status, 200, read.text)
        assert.include(read.text, "\"Exit\"", charset)
      }
      const ids = (yield* ops.list).map((library) => library.id)
      assert.includeMembers(ids, ["/charset/upper", "/charset/quoted"])
    }).pipe(Effect.scoped))

  it.effect("a payload key a procedure does not take is refused naming it, and nothing is added (`titel` was an add titled after the folder)", () =>
    Effect.gen(function*() {
      const base = yield* tempDir("svc-rpc-strict-")
      yield* Effect.promise(async () => {
        await fs.mkdir(path.join(base, "widgets"))
        await fs.writeFile(path.join(base, "widgets", "README.md"), readme("Widgets")["README.md"])
      })
      const { api, ops } = yield* remote({ DOCS_SOURCE_ROOTS: base })
      for (
        const [tag, payload, key] of [
          ["AddLibrary", { source: path.join(base, "widgets"), id: "/acme/strict", titel: "Widgets" }, "titel"],
          ["Refresh", { libraryId: "/acme/strict", force: true }, "force"],
          ["Remove", { libraryId: "/acme/strict", all: true }, "all"]
        ] as const
      ) {
        const response = yield* api.fetch("/rpc", {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/ndjson" },
          body: `${JSON.stringify({ _tag: "Request", id: "1", tag, payload, headers: [] })}\n`
        }).pipe(Effect.flatMap((answer) => Effect.promise(async () => ({ status: answer.status, text: await answer.text() }))))
        assert.strictEqual(response.status, 400, `${tag}: ${response.text}`)
        assert.deepStrictEqual(JSON.parse(response.text).issues.map((issue: any) => issue.parameter), [`line 1 payload.${key}`], tag)
      }
      assert.isFalse((yield* ops.list).some((library) => library.id === "/acme/strict"))
    }).pipe(Effect.scoped))

  it.effect("the local indexer (svc docs add without DOCS_URL) reads any folder, roots or not", () =>
    Effect.gen(function*() {
      const folder = yield* docsFolder(readme("Local"))
      const outcome = yield* (yield* Indexer).add(folder, { id: "/local/anything" })
      assert.strictEqual(outcome.libraryId, "/local/anything")
    }).pipe(Effect.scoped))
})

// On the real clock: a waiting add tries the run lock again every second.
layer(stack, { excludeTestServices: true, timeout: 120_000 })("an add over the docs RPC that waits for another run", (it) => {
  it.effect("the caller's stream says for whom it waits (once), then carries its own run to Done", () =>
    Effect.gen(function*() {
      const root = yield* tempDir("svc-busy-")
      const folder = path.join(root, "widgets")
      yield* Effect.promise(async () => {
        await fs.mkdir(folder)
        await fs.writeFile(path.join(folder, "README.md"), readme("Widgets")["README.md"])
      })
      const { ops } = yield* remote({ DOCS_SOURCE_ROOTS: root })
      // a run of /acme/busy/1.0 in this test's own indexer, held at its start
      const started = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const holding = yield* (yield* Indexer).add(folder, {
        id: "/acme/busy",
        version: "1.0",
        onProgress: (progress) =>
          progress._tag === "Started" ? Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(finish))) : Effect.void
      }).pipe(Effect.forkChild)
      yield* Deferred.await(started)

      const events: Array<IndexEvent> = []
      const waiting = yield* ops.add({ source: folder, id: "/acme/busy", version: "1.0" }, (event) => Effect.sync(() => events.push(event)))
        .pipe(Effect.forkChild)
      yield* waitFor(Effect.sync(() => events.length), (n) => n > 0, () => "the RPC caller to hear that it waits")
      assert.strictEqual(events[0]!._tag, "Waiting")
      assert.strictEqual((events[0] as { libraryId: string }).libraryId, "/acme/busy/1.0")
      // the server and this test share the process (and its lock session): the holder is this process
      assert.strictEqual((events[0] as { holder: string }).holder, `this process, pid ${process.pid}`)

      yield* Deferred.succeed(finish, undefined)
      yield* Fiber.join(holding)
      const last = yield* Fiber.join(waiting)
      assert.strictEqual(Option.getOrThrow(last)._tag, "Done")
      assert.deepStrictEqual(events.filter((event) => event._tag === "Waiting").length, 1, "told once")
      assert.deepStrictEqual(events.map((event) => event._tag).slice(1, 2), ["Started"], "then its own run")
    }).pipe(Effect.scoped))
})
