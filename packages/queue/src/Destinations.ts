/**
 * Refusing destinations in private, loopback, link-local and other internal ranges (SSRF), unless
 * `QUEUE_ALLOW_PRIVATE=true`: the queue's face of the suite's one outbound guard
 * (`@svc/platform` `OutboundGuard`, ipaddr.js range names). Checked at publish (literal addresses and
 * what the name resolves to) and again at delivery, on the address actually connected to (the
 * agents' `lookup`, see `Delivery.ts`), so a name that resolves differently later (DNS rebinding) is
 * still refused.
 */
import { OutboundGuard } from "@svc/platform"
import { Effect } from "effect"

export const SETTING = "QUEUE_ALLOW_PRIVATE"

/** How names are resolved for the publish-time check: the suite's (`OutboundGuard.Resolver`). */
export const Resolver = OutboundGuard.Resolver

/** The guard's options for the queue. */
export const guardOptions = (allowPrivate: boolean, resolve?: OutboundGuard.Resolve): OutboundGuard.GuardOptions => ({
  allowPrivate,
  setting: SETTING,
  ...(resolve === undefined ? {} : { resolve })
})

/** Whether an IP address (v4, v6, IPv4-mapped/compatible, 6to4, NAT64, …) is one the guard refuses. */
export const isPrivateAddress = OutboundGuard.isPrivateAddress

/**
 * Why `url` may not be a destination, or `undefined` when it may. A name that does not resolve is
 * refused too: it could never be delivered.
 */
export const refusal = (url: string, allowPrivate: boolean): Effect.Effect<string | undefined> =>
  allowPrivate
    ? Effect.succeed(undefined)
    : Effect.gen(function*() {
      const resolve = yield* Resolver
      return yield* OutboundGuard.refusal(url, guardOptions(false, resolve))
    })

/** A `lookup` for http agents that refuses private addresses (checked on the address connected to). */
export const guardedLookup = OutboundGuard.lookup(guardOptions(false))
