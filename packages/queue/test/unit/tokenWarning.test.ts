/** The queue's start says when QUEUE_TOKEN is unset (every route it guards answers 503), and is silent when it is set. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, Option, Redacted } from "effect"
import { QueueConfig } from "../../src/QueueConfig.ts"
import { WarnWithoutToken } from "../../src/Service.ts"

const warningsAtStart = (token: Option.Option<Redacted.Redacted<string>>) =>
  Effect.gen(function*() {
    const logged: Array<string> = []
    const capture = Logger.layer([Logger.make((options) => logged.push(`${options.logLevel}: ${String(options.message)}`))])
    yield* Effect.scoped(Layer.build(WarnWithoutToken.pipe(Layer.provide(QueueConfig.layerWith({ token })), Layer.provide(capture))))
    return logged
  })

describe("QUEUE_TOKEN at start", () => {
  it.effect("unset: one warning saying what answers 503", () =>
    Effect.gen(function*() {
      const logged = yield* warningsAtStart(Option.none())
      assert.deepStrictEqual(logged, [
        "Warn: QUEUE_TOKEN is not set: publish, the API and the RPC answer 503 until the queue is started with one"
      ])
    }))

  it.effect("set: nothing", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* warningsAtStart(Option.some(Redacted.make("dev-queue"))), [])
    }))
})
