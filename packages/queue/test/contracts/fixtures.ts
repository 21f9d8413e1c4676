/**
 * What the store contracts share: the layer they are given, their test runner (the layer provided
 * afresh to each test) and the messages they store.
 */
import { it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import type { Dlq } from "../../src/store/Dlq.ts"
import type { Events } from "../../src/store/Events.ts"
import type { Groups } from "../../src/store/Groups.ts"
import type { Messages } from "../../src/store/Messages.ts"
import type { NewMessage } from "../../src/store/Model.ts"
import type { SigningKeys } from "../../src/store/SigningKeys.ts"
import type { StoreTime } from "./StoreTime.ts"

export type Stores = Messages | Dlq | Groups | SigningKeys | Events | StoreTime

/** Every store on shared tables, with its `StoreTime` (see StoreTime.ts). */
export type StoresLayer = Layer.Layer<Stores, unknown>

/** `it.live(title, body)` on a fresh build of `layer` (fresh tables, a fresh database). */
export const storeTest = (layer: StoresLayer) => (title: string, body: Effect.Effect<void, unknown, Stores>) =>
  it.live(title, () => body.pipe(Effect.provide(layer)))

/** A message to store: a plain one, with a delay, a timeout, retries, a group's. */
export const newMessage = (overrides: {
  readonly url?: string
  readonly delayMs?: number
  readonly timeoutMs?: number
  readonly retries?: number
  readonly body?: string
  readonly topicName?: string
  readonly endpointName?: string
  readonly dedupId?: string
  readonly kind?: NewMessage["kind"]
} = {}): NewMessage => ({
  kind: overrides.kind ?? "message",
  url: overrides.url ?? "https://example.com/hook",
  delivery: {
    method: "POST",
    timeoutMs: overrides.timeoutMs ?? 1000,
    retries: overrides.retries ?? 3,
    delayMs: overrides.delayMs ?? 0,
    headers: { "content-type": "text/plain" }
  },
  body: new TextEncoder().encode(overrides.body ?? "hello"),
  topicName: overrides.topicName,
  endpointName: overrides.endpointName,
  dedupId: overrides.dedupId,
  callerIp: "203.0.113.7"
})
