/**
 * Refusing destinations in private, loopback, link-local and other internal ranges (SSRF), unless
 * `QUEUE_ALLOW_PRIVATE=true`. Checked at publish (literal addresses and what the name resolves to)
 * and again at delivery, on the address actually connected to (see `Delivery.ts`), so a name that
 * resolves differently later (DNS rebinding) is still refused.
 */
import { Effect } from "effect"
import * as Dns from "node:dns"
import * as Net from "node:net"

const blocked = new Net.BlockList()
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
] as const) blocked.addSubnet(network, prefix, "ipv4")
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96]
] as const) blocked.addSubnet(network, prefix, "ipv6")

/** Whether an IP address (v4, v6 or v4-mapped v6) is in a private or internal range. */
export const isPrivateAddress = (address: string): boolean => {
  const bare = address.replace(/^\[|\]$/g, "")
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)
  if (mapped) return blocked.check(mapped[1]!, "ipv4")
  const family = Net.isIP(bare)
  if (family === 4) return blocked.check(bare, "ipv4")
  if (family === 6) return blocked.check(bare, "ipv6")
  return false
}

const isLocalName = (host: string): boolean => {
  const name = host.toLowerCase().replace(/\.$/, "")
  return name === "localhost" || name.endsWith(".localhost") || name.endsWith(".internal") || name.endsWith(".local")
}

/**
 * Why `url` may not be a destination, or `undefined` when it may. A name that does not resolve is
 * refused too: it could never be delivered.
 */
export const refusal = (url: string, allowPrivate: boolean): Effect.Effect<string | undefined> => {
  if (allowPrivate) return Effect.succeed(undefined)
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "")
  const why = "is in a private or loopback range (set QUEUE_ALLOW_PRIVATE=true to allow it)"
  if (Net.isIP(host) !== 0) return Effect.succeed(isPrivateAddress(host) ? `${host} ${why}` : undefined)
  if (isLocalName(host)) return Effect.succeed(`${host} ${why}`)
  return Effect.callback<string | undefined>((resume) => {
    Dns.lookup(host, { all: true }, (error, addresses) => {
      if (error) return resume(Effect.succeed(`${host} does not resolve`))
      const internal = addresses.find((entry) => isPrivateAddress(entry.address))
      resume(Effect.succeed(internal === undefined ? undefined : `${host} resolves to ${internal.address}, which ${why}`))
    })
  }).pipe(Effect.timeoutOrElse({ duration: "3 seconds", orElse: () => Effect.succeed(`${host} did not resolve in time`) }))
}

/** A `lookup` for http agents that refuses private addresses (checked on the address connected to). */
export const guardedLookup: Net.LookupFunction = (hostname, options, callback) => {
  Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return (callback as any)(error)
    const list = addresses as Array<Dns.LookupAddress>
    const internal = list.find((entry) => isPrivateAddress(entry.address))
    if (internal !== undefined || isLocalName(hostname)) {
      const refused = Object.assign(new Error(`${hostname} resolves to a private or loopback address`), {
        code: "EPRIVATE"
      })
      return (callback as any)(refused)
    }
    if ((options as Dns.LookupOptions).all) return (callback as any)(null, list)
    const first = list[0]!
    ;(callback as any)(null, first.address, first.family)
  })
}
