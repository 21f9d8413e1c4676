export * from "./Errors.ts"
export * from "./Health.ts"
export * from "./Ids.ts"
export * from "./Suite.ts"
