import { Effect } from "effect"
import type { HttpClient } from "effect/http"
import type { Source } from "../Sources.ts"
import * as CsvFeed from "./CsvFeed.ts"
import * as JsonFeed from "./JsonFeed.ts"
import * as Mock from "./Mock.ts"
import type { SourceAdapter } from "./SourceAdapter.ts"

export * from "./SourceAdapter.ts"

/** The adapter of a source. */
export const adapterFor = (source: Source): Effect.Effect<SourceAdapter, never, HttpClient.HttpClient> => {
  switch (source.config.adapter) {
    case "mock":
      return Mock.make(source.config)
    case "json":
      return JsonFeed.make(source.config)
    case "csv":
      return CsvFeed.make(source.config)
  }
}
