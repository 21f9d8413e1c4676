/**
 * `ADMIN_TOKEN` checks for POST /admin/ingest and /rpc: constant-time comparison (of SHA-256 digests,
 * so lengths leak nothing either). Without an ADMIN_TOKEN the admin surface is disabled (503), never
 * open.
 */
import { AdminAuth, ServiceUnavailable, Unauthorized } from "@svc/schema"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { ListingsConfig } from "./ListingsConfig.ts"

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

export const disabledMessage = "Admin endpoints are disabled: the server has no ADMIN_TOKEN configured"

/** Checks a presented bearer token against the configured one. */
export const checkAdminToken = (
  configured: Option.Option<Redacted.Redacted<string>>,
  presented: string | undefined
): Effect.Effect<void, Unauthorized | ServiceUnavailable> => {
  if (Option.isNone(configured)) return Effect.fail(new ServiceUnavailable({ message: disabledMessage }))
  if (presented === undefined || presented === "") {
    return Effect.fail(new Unauthorized({ message: "Missing bearer token (Authorization: Bearer <ADMIN_TOKEN>)" }))
  }
  return timingSafeEqual(digest(presented), digest(Redacted.value(configured.value)))
    ? Effect.void
    : Effect.fail(new Unauthorized({ message: "Invalid bearer token" }))
}

/** The token of an `Authorization: Bearer <token>` header value. */
export const bearerOf = (header: string | undefined): string | undefined => {
  const match = header === undefined ? null : /^Bearer\s+(.+)$/i.exec(header.trim())
  return match?.[1]?.trim()
}

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const { adminToken } = yield* ListingsConfig
    return AdminAuth.of({
      bearer: (httpEffect, { credential }) =>
        Effect.andThen(checkAdminToken(adminToken, Redacted.value(credential)), httpEffect)
    })
  })
)
