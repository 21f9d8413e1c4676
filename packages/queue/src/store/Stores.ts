/**
 * Every store of the queue as one layer: `layer` on Postgres (needs `PgClient` and `QueueConfig`),
 * `layerMemory` on fresh shared in-memory tables (needs `QueueConfig`; tests only).
 */
import { Layer } from "effect"
import { Dlq } from "./Dlq.ts"
import { Enqueue } from "./Enqueue.ts"
import { Events } from "./Events.ts"
import { FlowControls } from "./FlowControl.ts"
import { Groups } from "./Groups.ts"
import { MemoryTables } from "./MemoryTables.ts"
import { Messages } from "./Messages.ts"
import { Queues } from "./Queues.ts"
import { Schedules } from "./Schedules.ts"
import { SigningKeys } from "./SigningKeys.ts"

export const layer = Layer.mergeAll(
  Layer.mergeAll(Messages.layerNoDeps, Dlq.layerNoDeps, Schedules.layerNoDeps, FlowControls.layerNoDeps, Queues.layerNoDeps).pipe(
    Layer.provide(Enqueue.layer)
  ),
  Groups.layer,
  SigningKeys.layer,
  Events.layer
)

export const layerMemory = Layer.mergeAll(Messages.layerMemory, Dlq.layerMemory, Groups.layerMemory, SigningKeys.layerMemory, Schedules.layerMemory, FlowControls.layerMemory, Queues.layerMemory, Events.layerMemory).pipe(
  Layer.provide(MemoryTables.layer)
)
