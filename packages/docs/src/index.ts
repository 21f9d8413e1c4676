export * from "./Indexer.ts"
export * from "./Search.ts"
export * as Splitter from "./Splitter.ts"
export * as Service from "./Service.ts"
