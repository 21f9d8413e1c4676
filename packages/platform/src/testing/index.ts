/** Test helpers (they import vitest: only for test files). */
export * from "./objectStorage.ts"
export * from "./tempDir.ts"
export * as TestDatabase from "./TestDatabase.ts"
export * from "./httpClient.ts"
export * as RequestFuzz from "./requestFuzz.ts"
export * from "./ports.ts"
export * from "./databaseDown.ts"
export * from "./openApi.ts"
