/**
 * The `Groups` contract, written once: `Groups.layerMemory` (test/unit/Stores.test.ts) and
 * `Groups.layer` on Postgres (test/Groups.contract.test.ts).
 *
 * Covers: upsert creating a group and keeping endpoint order; a named endpoint moving to a new URL
 * and a known URL taking a new name; the cap (nothing stored past it); removal by URL or name;
 * default headers; delete; unknown groups; pages by name.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Groups } from "../../src/store/Groups.ts"
import { storeTest, type StoresLayer } from "./fixtures.ts"
import { StoreTime } from "./StoreTime.ts"

const endpoints = (topic: { readonly endpoints: ReadonlyArray<{ readonly name?: string; readonly url: string }> }) =>
  topic.endpoints.map((e) => e.name === undefined ? e.url : `${e.name}=${e.url}`)

export const groupsContract = (name: string, layer: StoresLayer): void => {
  const test = storeTest(layer)

  describe(`Groups contract (${name})`, () => {
    test(
      "upsert creates the group, keeps the endpoints in order; get and list (by name) read it back",
      Effect.gen(function*() {
        const groups = yield* Groups
        assert.isTrue(Option.isNone(yield* groups.get("orders")))
        const created = yield* groups.upsertEndpoints("orders", [
          { name: "billing", url: "https://billing.example.com/in" },
          { url: "https://audit.example.com/in" }
        ], 100)
        assert.strictEqual(created.name, "orders")
        assert.deepStrictEqual(created.headers, {})
        assert.deepStrictEqual(endpoints(created), ["billing=https://billing.example.com/in", "https://audit.example.com/in"])
        yield* groups.upsertEndpoints("alerts", [{ url: "https://pager.example.com/" }], 100)
        assert.deepStrictEqual(Option.getOrThrow(yield* groups.get("orders")), created)
        assert.deepStrictEqual((yield* groups.list({ after: undefined, limit: 100 })).map((t) => t.name), ["alerts", "orders"])
      })
    )

    test(
      "list pages by name in byte order, after a name that need not exist, each group with its endpoints",
      Effect.gen(function*() {
        const groups = yield* Groups
        for (const name of ["b", "B", "_z", "a-b", "aB"]) yield* groups.upsertEndpoints(name, [{ url: `https://${name}.example.com/` }], 100)
        const names = (after: string | undefined, limit: number) =>
          Effect.map(groups.list({ after, limit }), (page) => page.map((topic) => topic.name))
        assert.deepStrictEqual(yield* names(undefined, 10), ["B", "_z", "a-b", "aB", "b"])
        assert.deepStrictEqual(yield* names(undefined, 2), ["B", "_z"])
        assert.deepStrictEqual(yield* names("_z", 2), ["a-b", "aB"])
        assert.deepStrictEqual(yield* names("a", 10), ["a-b", "aB", "b"])
        assert.deepStrictEqual(yield* names("b", 10), [])
        const [page] = yield* groups.list({ after: "aB", limit: 1 })
        assert.deepStrictEqual(endpoints(page!), ["https://b.example.com/"])
      })
    )

    test(
      "a named endpoint given a new URL moves there; a known URL takes the name it is given",
      Effect.gen(function*() {
        const groups = yield* Groups
        yield* groups.upsertEndpoints("orders", [
          { name: "billing", url: "https://billing.example.com/v1" },
          { url: "https://audit.example.com/in" }
        ], 100)
        const before = Option.getOrThrow(yield* groups.get("orders"))
        yield* StoreTime.use((time) => time.advance(1000))
        const moved = yield* groups.upsertEndpoints("orders", [
          { name: "billing", url: "https://billing.example.com/v2" },
          { name: "audit", url: "https://audit.example.com/in" }
        ], 100)
        assert.deepStrictEqual(endpoints(moved), ["audit=https://audit.example.com/in", "billing=https://billing.example.com/v2"])
        assert.strictEqual(moved.createdAt, before.createdAt)
        assert.isTrue(moved.updatedAt >= before.updatedAt)
        const unnamed = yield* groups.upsertEndpoints("orders", [{ url: "https://audit.example.com/in" }], 100)
        assert.deepStrictEqual(endpoints(unnamed), ["https://audit.example.com/in", "billing=https://billing.example.com/v2"])
      })
    )

    test(
      "past the cap nothing is stored: GroupFull, the group as it was (or still absent)",
      Effect.gen(function*() {
        const groups = yield* Groups
        const full = yield* Effect.flip(groups.upsertEndpoints("big", [
          { url: "https://1.example.com/" },
          { url: "https://2.example.com/" },
          { url: "https://3.example.com/" }
        ], 2))
        assert.deepStrictEqual([full._tag, full.name, full.endpoints, full.max], ["GroupFull", "big", 3, 2])
        assert.isTrue(Option.isNone(yield* groups.get("big")))
        yield* groups.upsertEndpoints("big", [{ url: "https://1.example.com/" }, { url: "https://2.example.com/" }], 2)
        // Upserting a URL already held does not grow the group.
        yield* groups.upsertEndpoints("big", [{ name: "one", url: "https://1.example.com/" }], 2)
        const over = yield* Effect.flip(groups.upsertEndpoints("big", [{ url: "https://3.example.com/" }], 2))
        assert.strictEqual(over.endpoints, 3)
        assert.deepStrictEqual(endpoints(Option.getOrThrow(yield* groups.get("big"))), [
          "one=https://1.example.com/",
          "https://2.example.com/"
        ])
      })
    )

    test(
      "remove endpoints by URL or by name; removing the last deletes the group; an unknown group is not found",
      Effect.gen(function*() {
        const groups = yield* Groups
        yield* groups.upsertEndpoints("orders", [
          { name: "a", url: "https://a.example.com/" },
          { name: "b", url: "https://b.example.com/" },
          { url: "https://c.example.com/" }
        ], 100)
        const left = yield* groups.removeEndpoints("orders", [{ name: "a" }, { url: "https://c.example.com/" }, { name: "zzz" }])
        assert.deepStrictEqual(endpoints(left), ["b=https://b.example.com/"])
        assert.strictEqual((yield* Effect.flip(groups.removeEndpoints("nope", [{ name: "a" }])))._tag, "TopicNotFound")
        assert.isTrue(Option.isNone(yield* groups.get("nope")))
        // A group has one or more endpoints: removing the last deletes it (as QStash does).
        const emptied = yield* groups.removeEndpoints("orders", [{ name: "b" }])
        assert.deepStrictEqual(endpoints(emptied), [])
        assert.isTrue(Option.isNone(yield* groups.get("orders")))
        assert.notInclude((yield* groups.list({ after: undefined, limit: 100 })).map((topic) => topic.name), "orders")
        // and the name can be used again from scratch
        yield* groups.upsertEndpoints("orders", [{ url: "https://d.example.com/" }], 100)
        assert.deepStrictEqual(endpoints(Option.getOrThrow(yield* groups.get("orders"))), ["https://d.example.com/"])
      })
    )

    test(
      "default headers are stored and replaced; delete removes the group; unknown groups are not found",
      Effect.gen(function*() {
        const groups = yield* Groups
        yield* groups.upsertEndpoints("orders", [{ url: "https://a.example.com/" }], 100)
        const set = yield* groups.setHeaders("orders", { "Svc-Retries": "6", "X-Team": ["payments", "audit"] })
        assert.deepStrictEqual(set.headers, { "Svc-Retries": "6", "X-Team": ["payments", "audit"] })
        const replaced = yield* groups.setHeaders("orders", { "X-Other": "1" })
        assert.deepStrictEqual(replaced.headers, { "X-Other": "1" })
        assert.deepStrictEqual(Option.getOrThrow(yield* groups.get("orders")).headers, { "X-Other": "1" })
        assert.strictEqual((yield* Effect.flip(groups.setHeaders("nope", {})))._tag, "TopicNotFound")
        yield* groups.delete("orders")
        assert.isTrue(Option.isNone(yield* groups.get("orders")))
        assert.deepStrictEqual(yield* groups.list({ after: undefined, limit: 100 }), [])
        assert.strictEqual((yield* Effect.flip(groups.delete("orders")))._tag, "TopicNotFound")
      })
    )
  })
}
