/**
 * Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, never the message, so the queue
 * neither forwards them (publish) nor reports them (a destination's answer in callbacks and the DLQ).
 */

/** The hop-by-hop header names, lowercase. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade"
])

/** The names a `Connection` header lists (`keep-alive, X-Hop`), lowercase: hop-by-hop for that message too. */
export const connectionOptions = (raw: string | ReadonlyArray<string> | undefined): ReadonlySet<string> =>
  new Set(
    (raw === undefined ? [] : typeof raw === "string" ? [raw] : raw)
      .flatMap((value) => value.split(","))
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== "")
  )
