/**
 * The contract of `IndexStore` (the index writer), run against `layerMemory` (test/unit) and Postgres
 * (test/IndexStore.contract.test.ts): registering, the refresh states and who may change them, the
 * live generation, the default version, removal, the listing. Each test builds a fresh layer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { IndexStore } from "../../src/IndexStore.ts"
import { greeterDocs, indexed, source, widgetsDocs } from "./fixtures.ts"

const stateOf = (libraryId: string, version: string) =>
  Effect.gen(function*() {
    const listed = (yield* (yield* IndexStore).list).find((library) => library.id === libraryId)
    return listed?.versions.find((v) => v.version === version)
  })

export const indexStoreContract = (name: string, layer: Layer.Layer<IndexStore, unknown>) =>
  describe(`IndexStore contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, IndexStore>) =>
      it.effect(title, () => Effect.provide(body(), layer))

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
        const running = yield* store.register(source("/acme/b", "2.0"), "indexing", { makeDefault: true })
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
        const started = Option.getOrThrow(yield* store.startIndexing("/acme/greeter", "1.0.0"))
        assert.strictEqual(started.location, source("/acme/greeter", "1.0.0").location)
        const versionId = started.versionId
        assert.strictEqual((yield* stateOf("/acme/greeter", "1.0.0"))?.state, "indexing")
        const tokens = yield* store.write(versionId, [])
        assert.strictEqual(tokens, 0)
        const version = yield* stateOf("/acme/greeter", "1.0.0")
        assert.deepStrictEqual([version?.state, version?.snippets, version?.tokens], ["ready", 0, 0])
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
        yield* store.register(source("/acme/a", "1.0"), "indexing", { makeDefault: true })
        const again = yield* stateOf("/acme/a", "1.0")
        assert.deepStrictEqual([again?.state, again?.errorCategory], ["indexing", null])
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
