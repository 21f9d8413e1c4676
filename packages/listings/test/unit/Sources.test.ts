/**
 * `SOURCES_FILE` is checked whole at start: a file that cannot be a set of feeds stops the start with
 * one line naming the file, the source and the problem, instead of a service that fails every run.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { tempDir } from "@svc/platform/testing"
import { Sources } from "../../src/Sources.ts"

const load = (sources: ReadonlyArray<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const file = path.join(yield* tempDir("svc-sources-"), "sources.json")
    yield* Effect.promise(() => fs.writeFile(file, JSON.stringify({ sources })))
    return yield* Effect.gen(function*() {
      return yield* Sources
    }).pipe(
      Effect.provide(Sources.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ SOURCES_FILE: file })))))
    )
  })

describe("SOURCES_FILE", () => {
  it.effect("http and https feeds load", () =>
    Effect.gen(function*() {
      const sources = yield* load([
        { id: "a", adapter: "json", url: "https://feeds.example.invalid/a.json" },
        { id: "b", adapter: "csv", url: "http://feeds.example.invalid/b.csv" }
      ])
      assert.deepStrictEqual(sources.all.map((source) => source.id), ["a", "b"])
    }).pipe(Effect.scoped))

  it.effect("a feed url of another scheme, or not a URL, stops the start naming the source (it failed every run)", () =>
    Effect.gen(function*() {
      for (const url of ["file:///etc/passwd", "gopher://feeds.example.invalid/", "data:text/plain,x", "feeds.example.invalid/a.json"]) {
        const error = yield* Effect.flip(load([{ id: "bad", adapter: "json", url }]))
        assert.match(error.message, /^SOURCES_FILE .*sources\.json: source bad: url ".*" is not (an absolute URL|an http or https URL)$/, url)
      }
    }).pipe(Effect.scoped))
})

describe("retired demo sources (ENABLE_MOCK_SOURCE off)", () => {
  it("every mock adapter and the built-in mock, never a feed that is merely called mock", () => {
    assert.deepStrictEqual(Sources.make([], false).retiredDemoSources, ["mock"])
    assert.deepStrictEqual(
      Sources.make([{ id: "demo", adapter: "mock" }, { id: "a", adapter: "json", url: "https://a.invalid/f.json" }], false)
        .retiredDemoSources,
      ["mock", "demo"]
    )
    assert.deepStrictEqual(Sources.make([{ id: "mock", adapter: "json", url: "https://a.invalid/f.json" }], false).retiredDemoSources, [])
    assert.deepStrictEqual(Sources.make([{ id: "mock", adapter: "mock" }], true).retiredDemoSources, [])
  })
})
