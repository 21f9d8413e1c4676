/**
 * The MCP server calls the REST API from its own address, so without help every MCP user would share
 * the API's anonymous rate-limit bucket of that one address. The MCP server therefore forwards the
 * address of the client it serves, and signs it so the API can believe it:
 *
 * - `X-Svc-Client-Address: <ip>` — the MCP client's address (the MCP server's socket peer, or the
 *   last `X-Forwarded-For` entry with `MCP_TRUST_PROXY=true`);
 * - `X-Svc-Client-Signature: <unix seconds>.<hex HMAC-SHA256>` over `"<seconds>.<ip>"` with
 *   `DOCS_FORWARD_SECRET`.
 *
 * The API takes the address only when the signature is right and at most {@link MAX_SKEW_SECONDS} old;
 * anything else (no secret, a forged or stale signature, a malformed address) is ignored and the
 * socket peer counts, as before. The secret never travels, only the HMAC.
 *
 * `DOCS_FORWARD_SECRET` unset: a random secret per process. The API and the MCP server of one process
 * (`svc start all`, `npm start`) share it, so forwarding works there with nothing to configure; a
 * separately run `svc mcp` (or docs-api) needs the same `DOCS_FORWARD_SECRET` on both sides, else the
 * API ignores the forwarded address and all MCP users share the MCP server's bucket.
 */
import { Config, ConfigProvider, Option, Redacted } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { isIP } from "node:net"

export const ADDRESS_HEADER = "x-svc-client-address"
export const SIGNATURE_HEADER = "x-svc-client-signature"

/** How old (or how far in the future, clocks differ) a signature may be. */
export const MAX_SKEW_SECONDS = 300

const processSecret = Redacted.make(randomBytes(32).toString("base64url"))

/** The shortest `DOCS_FORWARD_SECRET` accepted: an HMAC key anyone could guess signs any address. */
export const MIN_SECRET_CHARS = 16

/**
 * `DOCS_FORWARD_SECRET`, or this process's random one when it is unset or empty; one shorter than
 * {@link MIN_SECRET_CHARS} (" " was accepted) stops the start. The message never repeats it.
 */
export const ForwardSecret: Config.Config<Redacted.Redacted<string>> = Config.option(
  Config.Redacted("DOCS_FORWARD_SECRET")
).pipe(
  Config.flatMap((configured): Config.Config<Redacted.Redacted<string>> =>
    Option.isNone(configured)
      ? Config.succeed(processSecret)
      : Redacted.value(configured.value).trim().length >= MIN_SECRET_CHARS
      ? Config.succeed(configured.value)
      : Config.fail(new ConfigProvider.SourceError({ message: `DOCS_FORWARD_SECRET must be at least ${MIN_SECRET_CHARS} characters` }))
  )
)

const hmac = (secret: Redacted.Redacted<string>, seconds: number, address: string) =>
  createHmac("sha256", Redacted.value(secret)).update(`${seconds}.${address}`, "utf8").digest("hex")

/** The two headers that forward `address`, signed now. */
export const forwardingHeaders = (
  secret: Redacted.Redacted<string>,
  address: string,
  nowMillis: number = Date.now()
): Record<string, string> => {
  const seconds = Math.floor(nowMillis / 1000)
  return { [ADDRESS_HEADER]: address, [SIGNATURE_HEADER]: `${seconds}.${hmac(secret, seconds, address)}` }
}

/** The forwarded address when the headers carry a valid, fresh signature; undefined otherwise. */
export const verifiedForwardedAddress = (
  secret: Redacted.Redacted<string>,
  headers: Readonly<Record<string, string | undefined>>,
  nowMillis: number = Date.now()
): string | undefined => {
  const address = headers[ADDRESS_HEADER]?.trim()
  const signature = headers[SIGNATURE_HEADER]?.trim()
  if (address === undefined || signature === undefined || address.length > 64 || isIP(address) === 0) return undefined
  const match = /^(\d{1,12})\.([0-9a-f]{64})$/.exec(signature)
  if (match === null) return undefined
  const seconds = Number(match[1])
  if (Math.abs(nowMillis / 1000 - seconds) > MAX_SKEW_SECONDS) return undefined
  const expected = Buffer.from(hmac(secret, seconds, address), "hex")
  return timingSafeEqual(expected, Buffer.from(match[2]!, "hex")) ? address : undefined
}
