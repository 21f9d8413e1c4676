/**
 * The index in memory, for tests: what `IndexStore.layerMemory` writes and `Search.layerMemory` reads
 * (the tables `docs.libraries`, `docs.versions` and each version's live generation). One `Ref`, fresh
 * per layer build; both memory layers provide this same `layer`, so one build of the two shares it.
 * Never the product's path: the product's index is Postgres.
 */
import type { IndexState, SourceKind } from "@svc/schema"
import { Context, Layer, Ref } from "effect"
import type { Snippet } from "./Splitter.ts"

export interface MemoryLibrary {
  readonly id: string
  readonly title: string
  readonly description: string
  readonly kind: SourceKind
  readonly location: string
  readonly defaultVersion: string
  readonly trustScore: number
  /** Rules for agents from `svc.json`. */
  readonly rules?: ReadonlyArray<string> | undefined
}

export interface MemoryVersion {
  /** The row id (registration order). */
  readonly id: string
  readonly libraryId: string
  readonly version: string
  readonly state: IndexState
  readonly errorCategory: string | null
  /** The live generation's snippets, in document order; null before the first write. */
  readonly live: ReadonlyArray<Snippet> | null
  readonly snippetCount: number
  readonly tokenCount: number
  readonly lastUpdate: Date | null
  /** Where the version was registered from (`source_location`). */
  readonly location: string
  /** An add's version, to become the default once ready (`pending_default`). */
  readonly pendingDefault?: boolean
  /** The last run asked for was a remote caller's (`confined`). */
  readonly confined?: boolean
  /**
   * A run holds the version (IndexStore `claim`, `startIndexing`, until its scope closes): the memory
   * form of its run lock (RunLocks.ts).
   */
  readonly running?: boolean | undefined
}

/**
 * The state a version is listed with, as `RunLocks.listedState` in Postgres: `indexing` with no run
 * holding it (what a run whose process died leaves) is `queued`.
 */
export const listedVersionState = (version: MemoryVersion): IndexState =>
  version.state === "indexing" && version.running !== true ? "queued" : version.state

export interface MemoryIndexState {
  readonly libraries: ReadonlyMap<string, MemoryLibrary>
  /** In registration order. */
  readonly versions: ReadonlyArray<MemoryVersion>
  readonly nextId: number
}

export class MemoryIndex extends Context.Service<MemoryIndex, Ref.Ref<MemoryIndexState>>()("@svc/docs/MemoryIndex") {
  /** An empty index, fresh per build. */
  static readonly layer = Layer.effect(MemoryIndex, Ref.make<MemoryIndexState>({ libraries: new Map(), versions: [], nextId: 1 }))
}
