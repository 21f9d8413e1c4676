/**
 * The contract of `IndexStore` (the index writer), run against `layerMemory` (test/unit) and Postgres
 * (test/IndexStore.contract.test.ts): registering, the refresh states and who may change them, the
 * runs' claims on their versions (run locks: a second claim is refused while one holds; an `indexing`
 * version no run holds is listed `queued`), the live generation, the default version, removal, the
 * listing. Each test builds a fresh layer. (Claims across processes: test/runLocks.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, type Layer, Option, Result, Scope } from "effect"
import { IndexStore } from "../../src/IndexStore.ts"
import { greeterDocs, indexed, source, widgetsDocs } from "./fixtures.ts"

const stateOf = (libraryId: string, version: string) =>
  Effect.gen(function*() {
    const listed = (yield* (yield* IndexStore).list).find((library) => library.id === libraryId)
    return listed?.versions.find((v) => v.version === version)
  })

export const indexStoreContract = (name: string, layer: Layer.Layer<IndexStore, unknown>) =>
  describe(`IndexStore contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, IndexStore | Scope.Scope>) =>
      it.effect(title, () => Effect.provide(Effect.scoped(body()), layer))

    /** A claim held until `close` (a run's scope), as a run that is going on holds its version. */
    const held = <A, E>(start: Effect.Effect<A, E, Scope.Scope | IndexStore>) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const value = yield* Scope.provide(scope)(start)
        return { value, close: Scope.close(scope, Exit.void) }
      })

    test("an empty index; a written version is ready with its figures, listed, and the library's default", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        assert.isTrue(yield* store.isEmpty)
        const snippets = yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        assert.isFalse(yield* store.isEmpty)
        const [library] = yield* store.list
        assert.strictEqual(library!.id, "/acme/greeter")
        assert.strictEqual(library!.title, "greeter")
        assert.strictEqual(library!.source, "/srv/docs/acme/greeter")
        assert.strictEqual(library!.defaultVersion, "1.0.0")
        const [version] = library!.versions
        assert.deepStrictEqual(
          [version!.version, version!.state, version!.errorCategory, version!.snippets, version!.tokens],
          ["1.0.0", "ready", null, snippets.length, snippets.reduce((sum, s) => sum + s.tokens, 0)]
        )
        assert.instanceOf(version!.lastUpdate, Date)
        assert.deepStrictEqual(yield* store.unfinished, [])
        assert.deepStrictEqual(yield* store.library("/acme/greeter"), Option.some({ location: "/srv/docs/acme/greeter", defaultVersion: "1.0.0" }))
        assert.isTrue(Option.isNone(yield* store.library("/acme/nothing")))
      }))

    test("enqueue registers queued versions, listed as unfinished oldest first; a version being indexed stays indexing", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        const running = yield* store.claim(source("/acme/b", "2.0"), { makeDefault: true })
        yield* store.enqueue([source("/acme/a", "1.0"), source("/acme/b", "2.0"), source("/acme/c", "3.0")])
        assert.deepStrictEqual(yield* store.unfinished, [
          { libraryId: "/acme/b/2.0", version: "2.0", state: "indexing" },
          { libraryId: "/acme/a/1.0", version: "1.0", state: "queued" },
          { libraryId: "/acme/c/3.0", version: "3.0", state: "queued" }
        ])
        yield* store.write(running, [])
        assert.deepStrictEqual((yield* store.unfinished).map((v) => v.libraryId), ["/acme/a/1.0", "/acme/c/3.0"])
        assert.strictEqual((yield* stateOf("/acme/b", "2.0"))?.state, "ready")
      }))

    test("a version that is not made the default leaves the library's default as it was", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        yield* indexed(source("/acme/greeter", "2.0.0"), greeterDocs, { makeDefault: false })
        assert.strictEqual(Option.getOrThrow(yield* store.library("/acme/greeter")).defaultVersion, "1.0.0")
        yield* indexed(source("/acme/greeter", "3.0.0"), greeterDocs)
        assert.strictEqual(Option.getOrThrow(yield* store.library("/acme/greeter")).defaultVersion, "3.0.0")
        const [library] = yield* store.list
        assert.deepStrictEqual(library!.versions.map((v) => v.version), ["1.0.0", "2.0.0", "3.0.0"])
      }))

    test("a new write replaces the live snippets; startIndexing marks an existing version only, and names the source it was registered from", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        // a second version from another folder, registered and not the default: its own source, not the library's
        yield* store.register({ ...source("/acme/greeter", "2.0.0"), location: "/srv/greeter-2" }, "queued", { makeDefault: false })
        assert.strictEqual(Option.getOrThrow(yield* store.startIndexing("/acme/greeter", "2.0.0")).location, "/srv/greeter-2")
        assert.isTrue(Option.isNone(yield* store.startIndexing("/acme/greeter", "9.9.9")))
        const started = Option.getOrThrow((yield* held(store.startIndexing("/acme/greeter", "1.0.0"))).value)
        assert.strictEqual(started.location, source("/acme/greeter", "1.0.0").location)
        const versionId = started.versionId
        assert.strictEqual((yield* stateOf("/acme/greeter", "1.0.0"))?.state, "indexing")
        const tokens = yield* store.write(versionId, [])
        assert.strictEqual(tokens, 0)
        const version = yield* stateOf("/acme/greeter", "1.0.0")
        assert.deepStrictEqual([version?.state, version?.snippets, version?.tokens], ["ready", 0, 0])
      }))

    test("an add's version is marked to become the default once ready; startIndexing says so; a promote clears every such mark of the library", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        // what a refresh or resume starting the version is told (its run ends at once)
        const meantDefault = (version: string) =>
          Effect.gen(function*() {
            const started = yield* held(store.startIndexing("/acme/greeter", version))
            yield* started.close
            return Option.getOrThrow(started.value).defaultWhenReady
          })
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        // an add of 2.0.0 whose run died (its claim's scope closed, the version left indexing)
        yield* (yield* held(store.claim(source("/acme/greeter", "2.0.0"), { makeDefault: false, defaultWhenReady: true }))).close
        yield* store.register(source("/acme/greeter", "3.0.0"), "queued", { makeDefault: false })
        assert.isTrue(yield* meantDefault("2.0.0"))
        assert.isFalse(yield* meantDefault("3.0.0"))
        // a refresh's registration of the version it holds keeps the mark
        yield* store.register(source("/acme/greeter", "2.0.0"), "indexing", { makeDefault: false })
        assert.isTrue(yield* meantDefault("2.0.0"))
        // a later add's promote (of 3.0.0) settles it: 2.0.0 is no longer meant to take over
        yield* store.promote(source("/acme/greeter", "3.0.0"))
        assert.isFalse(yield* meantDefault("2.0.0"))
        assert.strictEqual((yield* (yield* IndexStore).list).find((l) => l.id === "/acme/greeter")?.defaultVersion, "3.0.0")
        // an add interrupted by its caller withdraws the mark; a requeue of a refresh keeps it
        const cancelled = yield* held(store.claim(source("/acme/greeter", "4.0.0"), { makeDefault: false, defaultWhenReady: true }))
        yield* store.requeue(cancelled.value, { withdrawDefault: true })
        yield* cancelled.close
        assert.strictEqual((yield* stateOf("/acme/greeter", "4.0.0"))?.state, "queued")
        assert.isFalse(yield* meantDefault("4.0.0"))
        const killedAdd = yield* held(store.claim(source("/acme/greeter", "5.0.0"), { makeDefault: false, defaultWhenReady: true }))
        yield* store.requeue(killedAdd.value)
        yield* killedAdd.close
        assert.isTrue(yield* meantDefault("5.0.0"))
      }))

    test("markFailed and requeue change only a version that is still indexing", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        const failing = yield* store.register(source("/acme/a", "1.0"), "indexing", { makeDefault: true })
        yield* store.markFailed(failing, "clone_failed")
        const failed = yield* stateOf("/acme/a", "1.0")
        assert.deepStrictEqual([failed?.state, failed?.errorCategory], ["failed", "clone_failed"])

        const interrupted = yield* store.register(source("/acme/b", "1.0"), "indexing", { makeDefault: true })
        yield* store.requeue(interrupted)
        assert.strictEqual((yield* stateOf("/acme/b", "1.0"))?.state, "queued")

        // finished by another run meanwhile: its state stands
        const done = yield* store.register(source("/acme/c", "1.0"), "indexing", { makeDefault: true })
        yield* store.write(done, [])
        yield* store.markFailed(done, "read_failed")
        yield* store.requeue(done)
        const ready = yield* stateOf("/acme/c", "1.0")
        assert.deepStrictEqual([ready?.state, ready?.errorCategory], ["ready", null])

        // a new run of a failed version clears its category
        yield* store.claim(source("/acme/a", "1.0"), { makeDefault: true })
        const again = yield* stateOf("/acme/a", "1.0")
        assert.deepStrictEqual([again?.state, again?.errorCategory], ["indexing", null])
      }))

    test("a run's claim holds its version: another claim or startIndexing is VersionBusy and changes nothing, until the run's scope closes", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        const first = yield* held(store.claim(source("/acme/a", "1.0"), { makeDefault: true }))
        assert.strictEqual((yield* stateOf("/acme/a", "1.0"))?.state, "indexing")
        // a second run, from another folder: refused, the version as the first run made it
        const elsewhere = { ...source("/acme/a", "1.0"), location: "/srv/elsewhere" }
        const refused = yield* Effect.result(Effect.scoped(store.claim(elsewhere, { makeDefault: true })))
        assert.isTrue(Result.isFailure(refused))
        const busy = Result.getFailure(refused).pipe(Option.getOrThrow)
        assert.strictEqual(busy._tag, "VersionBusy")
        assert.strictEqual(busy.libraryId, "/acme/a/1.0")
        assert.match(busy.message, /^\/acme\/a\/1\.0 is being indexed by another run \(.+\)$/)
        const again = yield* Effect.result(Effect.scoped(store.startIndexing("/acme/a", "1.0")))
        assert.strictEqual(Result.isFailure(again) ? again.failure._tag : "started", "VersionBusy")
        assert.deepStrictEqual((yield* store.list)[0]!.source, "/srv/docs/acme/a")
        assert.strictEqual((yield* stateOf("/acme/a", "1.0"))?.state, "indexing")

        // the run ends without a write (its process died): the version waits, listed queued
        yield* first.close
        assert.strictEqual((yield* stateOf("/acme/a", "1.0"))?.state, "queued")
        assert.deepStrictEqual(yield* store.unfinished, [{ libraryId: "/acme/a/1.0", version: "1.0", state: "queued" }])
        // and a new run takes it at once, from where it says
        const second = yield* held(store.startIndexing("/acme/a", "1.0"))
        assert.strictEqual(Option.getOrThrow(second.value).location, "/srv/docs/acme/a")
        assert.strictEqual((yield* stateOf("/acme/a", "1.0"))?.state, "indexing")
        yield* store.write(Option.getOrThrow(second.value).versionId, [])
        yield* second.close
        assert.strictEqual((yield* stateOf("/acme/a", "1.0"))?.state, "ready")
        assert.deepStrictEqual(yield* store.unfinished, [])
      }))

    test("an indexing version no run holds (its run's process died) is listed queued; startIndexing unfinishedOnly takes it, never a finished one", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        // what a killed run leaves: registered indexing, nobody holding it
        yield* store.register(source("/acme/dead", "1.0"), "indexing", { makeDefault: true })
        yield* indexed(source("/acme/done", "1.0"), greeterDocs)
        assert.strictEqual((yield* stateOf("/acme/dead", "1.0"))?.state, "queued")
        assert.deepStrictEqual(yield* store.unfinished, [{ libraryId: "/acme/dead/1.0", version: "1.0", state: "queued" }])

        assert.isTrue(Option.isNone(yield* store.startIndexing("/acme/done", "1.0", { unfinishedOnly: true })))
        assert.strictEqual((yield* stateOf("/acme/done", "1.0"))?.state, "ready")
        assert.isTrue(Option.isNone(yield* store.startIndexing("/acme/dead", "9.9", { unfinishedOnly: true })))
        const resumed = yield* held(store.startIndexing("/acme/dead", "1.0", { unfinishedOnly: true }))
        assert.isTrue(Option.isSome(resumed.value))
        assert.deepStrictEqual(yield* store.unfinished, [{ libraryId: "/acme/dead/1.0", version: "1.0", state: "indexing" }])
        // a second resume at once leaves it to the first
        const second = yield* Effect.result(Effect.scoped(store.startIndexing("/acme/dead", "1.0", { unfinishedOnly: true })))
        assert.strictEqual(Result.isFailure(second) ? second.failure._tag : "started", "VersionBusy")
        // the run is interrupted: back to queued before its claim ends
        yield* store.requeue(Option.getOrThrow(resumed.value).versionId)
        yield* resumed.close
        assert.strictEqual((yield* stateOf("/acme/dead", "1.0"))?.state, "queued")
      }))

    test("remove: one version, or the library with all its versions; false for what does not exist", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        yield* indexed(source("/acme/greeter", "2.0.0"), greeterDocs)
        yield* indexed(source("/acme/widgets", "1.0"), widgetsDocs)
        assert.isTrue(yield* store.remove("/acme/greeter", "1.0.0"))
        assert.isFalse(yield* store.remove("/acme/greeter", "1.0.0"))
        assert.deepStrictEqual((yield* store.list).map((l) => [l.id, l.versions.map((v) => v.version)]), [
          ["/acme/greeter", ["2.0.0"]],
          ["/acme/widgets", ["1.0"]]
        ])
        assert.isTrue(yield* store.remove("/acme/greeter", undefined))
        assert.isFalse(yield* store.remove("/acme/greeter", undefined))
        assert.deepStrictEqual((yield* store.list).map((l) => l.id), ["/acme/widgets"])
        assert.isTrue(yield* store.remove("/acme/widgets", undefined))
        assert.isTrue(yield* store.isEmpty)
      }))

    test("remove: the default version's place goes to the newest ready version; the last version takes the library with it", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        const defaultOf = (id: string) => Effect.map(store.library(id), Option.map((library) => library.defaultVersion))
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        yield* indexed(source("/acme/greeter", "2.0.0"), greeterDocs)
        yield* store.register(source("/acme/greeter", "3.0.0"), "queued", { makeDefault: false })
        yield* indexed(source("/acme/greeter", "4.0.0"), greeterDocs)
        // not the default: the default stays
        assert.isTrue(yield* store.remove("/acme/greeter", "2.0.0"))
        assert.deepStrictEqual(yield* defaultOf("/acme/greeter"), Option.some("4.0.0"))
        // the default: the newest ready one (1.0.0), not the newer 3.0.0 that is only queued
        assert.isTrue(yield* store.remove("/acme/greeter", "4.0.0"))
        assert.deepStrictEqual(yield* defaultOf("/acme/greeter"), Option.some("1.0.0"))
        // no ready one left: the newest
        assert.isTrue(yield* store.remove("/acme/greeter", "1.0.0"))
        assert.deepStrictEqual(yield* defaultOf("/acme/greeter"), Option.some("3.0.0"))
        // the last one: the library goes too
        assert.isTrue(yield* store.remove("/acme/greeter", "3.0.0"))
        assert.isTrue(Option.isNone(yield* store.library("/acme/greeter")))
        assert.isTrue(yield* store.isEmpty)
        assert.isFalse(yield* store.remove("/acme/greeter", "3.0.0"))
      }))

    test("promote: a version registered without becoming the default is made it later, with its source's title and location; unknown ids change nothing", () =>
      Effect.gen(function*() {
        const store = yield* IndexStore
        yield* indexed(source("/acme/greeter", "1.0.0"), greeterDocs)
        const next = { ...source("/acme/greeter", "2.0.0"), title: "Greeter 2", location: "/srv/greeter-2" }
        yield* indexed(next, greeterDocs, { makeDefault: false })
        // registered, not promoted: the library is as it was
        assert.deepInclude((yield* store.list)[0]!, { defaultVersion: "1.0.0", title: source("/acme/greeter", "1.0.0").title })
        yield* store.promote(next)
        yield* store.promote({ ...next, libraryId: "/acme/nothing" })
        assert.deepStrictEqual((yield* store.list).map((l) => [l.id, l.defaultVersion, l.title, l.source]), [["/acme/greeter", "2.0.0", "Greeter 2", "/srv/greeter-2"]])
      }))
  })
