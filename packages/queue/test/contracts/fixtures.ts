/** Messages to store in the contracts: a plain one, with a delay, a timeout, retries, a group's. */
import type { NewMessage } from "../../src/store/Model.ts"

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
