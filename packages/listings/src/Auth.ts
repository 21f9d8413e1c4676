/**
 * `ADMIN_TOKEN` guards POST /admin/ingest and /rpc, through the suite's one bearer check
 * (`BearerAuth` in @svc/platform): without an ADMIN_TOKEN the admin surface is disabled (503), never
 * open.
 */
import { BearerAuth } from "@svc/platform"
import { AdminAuth } from "@svc/schema"
import { Effect, Layer } from "effect"
import { ListingsConfig } from "./ListingsConfig.ts"

/** The admin token's check, from the configuration. */
export const adminAuth = Effect.map(ListingsConfig, ({ adminToken }) =>
  BearerAuth.make({ variable: "ADMIN_TOKEN", surface: "The admin API", token: adminToken }))

export const AdminAuthLive = Layer.effect(AdminAuth, Effect.map(adminAuth, (auth) => AdminAuth.of({ bearer: auth.httpApi })))
