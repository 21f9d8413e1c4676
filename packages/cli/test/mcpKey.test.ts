/**
 * `svc mcp --transport stdio` with a key that is only whitespace is a usage error naming where it came
 * from: it ran the server anonymously without a word (an outside audit). A real `svc` process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { finished, svc } from "./svcProcess.ts"

describe("svc mcp --transport stdio with a key that is only whitespace", () => {
  it.live("--api-key \"\" or \" \", or SVC_API_KEY=\"  \": a usage error naming it, not an anonymous server; an empty SVC_API_KEY is unset", () =>
    Effect.gen(function*() {
      for (const [args, env, named] of [
        [["--api-key", ""], {}, "--api-key"],
        [["--api-key", "  "], {}, "--api-key"],
        [[], { SVC_API_KEY: "  " }, "SVC_API_KEY"]
      ] as const) {
        const run = svc(["mcp", "--transport", "stdio", ...args], { ...env, DOCS_API_URL: "http://127.0.0.1:9" })
        assert.strictEqual(yield* finished(run).pipe(Effect.timeout("60 seconds")), 1, run.output())
        assert.include(run.stderr(), `${named} is empty: give the key, or leave both unset to call anonymously`)
        assert.strictEqual(run.stdout(), "")
      }
    }), 120_000)
})
