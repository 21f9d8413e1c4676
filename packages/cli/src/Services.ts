/**
 * The services `svc start` can run. A service registers here when it lands: its name, what it
 * does, the Postgres schemas (migrations/<schema>) it needs, and its layer (HTTP server(s) and
 * background work, needing only the database).
 */
import type { PgClient } from "@effect/sql-pg"
import * as UploadsDemo from "@svc/blob/demo"
import { Mcp, Service as DocsService } from "@svc/docs"
import { Service as ListingsService } from "@svc/listings"
import type { Database } from "@svc/platform"
import { Service as QueueServer } from "@svc/queue"
import type { Config, Layer } from "effect"
import type { SqlClient } from "effect/sql"

interface ServiceCommon {
  readonly name: ServiceName
  /** What it does (its port is the status server's to say: it is the one configured). */
  readonly description: string
  /** Its HTTP port's setting and variable (the embedded Postgres must not take it). */
  readonly port: Config.Config<number>
  readonly portVariable: string
}

/**
 * A service on the suite's database (its schemas migrated first), or one that needs none (the MCP
 * server calls the docs API; the uploads demo stores in object storage): started alone, those start
 * no database, so `svc start mcp` in front of a docs API elsewhere neither runs nor writes an
 * embedded Postgres.
 */
export type SuiteService =
  | ServiceCommon & {
    readonly database: true
    readonly schemas: ReadonlyArray<string>
    /**
     * Its settings, read by `svc start` before the database starts: a bad value then stops the start
     * at once, with no embedded cluster created and migrated first.
     */
    readonly settings: Layer.Layer<never, unknown>
    readonly layer: Layer.Layer<never, unknown, Database | PgClient.PgClient | SqlClient.SqlClient>
  }
  | ServiceCommon & { readonly database: false; readonly layer: Layer.Layer<never, unknown> }

/** Every service of the suite, landed or not (the `svc start` argument accepts these). */
export const serviceNames = ["listings", "queue", "docs-api", "mcp", "uploads"] as const
export type ServiceName = (typeof serviceNames)[number]

/** The services of this build. */
export const landed: ReadonlyArray<SuiteService> = [
  {
    name: "listings",
    database: true,
    description: "Listings backend: car offers from partner feeds, search, sources, images, import services",
    schemas: ["listings"],
    port: ListingsService.Port,
    portVariable: "LISTINGS_PORT",
    settings: ListingsService.SettingsChecked,
    layer: ListingsService.layer
  },
  {
    name: "queue",
    database: true,
    description: "Message delivery queue: publish, durable delivery with retries, callbacks, DLQ, URL groups",
    schemas: ["queue"],
    port: QueueServer.Port,
    portVariable: "QUEUE_PORT",
    settings: QueueServer.SettingsChecked,
    layer: QueueServer.layer
  },
  {
    name: "docs-api",
    database: true,
    description: "Documentation lookup REST API v2: library search and context for a question",
    schemas: ["docs"],
    port: DocsService.Port,
    portVariable: "DOCS_PORT",
    settings: DocsService.SettingsChecked,
    layer: DocsService.layer
  },
  {
    name: "mcp",
    database: false,
    description: "Documentation lookup for coding agents: MCP over stateless HTTP, calling the docs API",
    port: Mcp.Port,
    portVariable: "MCP_PORT",
    layer: Mcp.httpLayer()
  },
  {
    name: "uploads",
    database: false,
    description: "Uploads demo of @svc/blob: React page with drop zone, per-file progress, cancel and errors; upload route into the local object storage (radosgw, else s3rver)",
    port: UploadsDemo.Port,
    portVariable: "UPLOADS_PORT",
    layer: UploadsDemo.layer
  }
]
