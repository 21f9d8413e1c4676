import { describe, expect, it } from "vitest"
import { type BaselineSnippet, ftsQuery, makeBaseline } from "./docs-baseline.ts"

const snippet = (sourcePath: string, headingPath: ReadonlyArray<string>, body: string): BaselineSnippet => ({
  title: headingPath.at(-1)!,
  headingPath,
  description: "",
  body,
  sourcePath
})

describe("docs-mcp-server's full-text formula, emulated", () => {
  it("asks the whole question as a phrase OR each word, quotes dropped", () => {
    expect(ftsQuery("retry  a \"failed\" request")).toBe("\"retry a failed request\" OR \"retry\" OR \"a\" OR \"failed\" OR \"request\"")
    expect(ftsQuery("memfs")).toBe("\"memfs\"")
    expect(ftsQuery("  ")).toBe("\"\"")
  })

  it("ranks by BM25 with stop words kept, one entry per file and heading path, at most as many as asked", () => {
    const baseline = makeBaseline([
      snippet("docs/hooks.md", ["Hooks", "onRequest"], "Runs for every request before the body is parsed."),
      snippet("docs/hooks.md", ["Hooks", "onRequest"], "A second part of the same section: before, before."),
      snippet("docs/hooks.md", ["Hooks", "onResponse"], "Runs after the response was sent."),
      snippet("docs/server.md", ["Server", "listen"], "Starts the server on a port.")
    ])
    try {
      const ranked = baseline.rank("what runs before the body is parsed", 10)
      // "the" is no stop word here: the server's snippet matches on it alone, last
      expect(ranked.map((s) => `${s.sourcePath} # ${s.title}`)).toEqual([
        "docs/hooks.md # onRequest",
        "docs/hooks.md # onResponse",
        "docs/server.md # listen"
      ])
      expect(baseline.rank("what runs before the body is parsed", 1)).toHaveLength(1)
      expect(baseline.rank("port", 10).map((s) => s.sourcePath)).toEqual(["docs/server.md"])
      expect(baseline.rank("graphql", 10)).toEqual([])
    } finally {
      baseline.close()
    }
  })
})
