/** The SigningKeys contract (test/contracts/SigningKeys.ts) against Postgres: a fresh migrated database per test. */
import { signingKeysContract } from "./contracts/SigningKeys.ts"
import { postgresStores } from "./support.ts"

signingKeysContract("postgres", postgresStores)
