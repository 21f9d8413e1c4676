/**
 * `Source:` lines an agent can open (sources/SourceLinks.ts): repository URLs in every form git and
 * package.json use, the web address per host, each snippet's line in its file, and the rendered line.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseRepository, repositoryBase, withSourceLinks } from "../../src/sources/SourceLinks.ts"
import { render, split, tokensOf } from "../../src/Splitter.ts"

const sha = "0123456789abcdef0123456789abcdef01234567"

describe("source links", () => {
  it("repository URLs in git's and package.json's forms", () => {
    for (const url of [
      "https://github.com/acme/widgets.git",
      "git+https://github.com/acme/widgets.git",
      "git+ssh://git@github.com/acme/widgets.git",
      "ssh://git@github.com:22/acme/widgets",
      "git@github.com:acme/widgets.git",
      "github:acme/widgets",
      "acme/widgets",
      "https://user:secret@github.com/acme/widgets.git#main"
    ]) {
      assert.deepStrictEqual(parseRepository(url), { host: "github.com", path: "acme/widgets" }, url)
      assert.strictEqual(repositoryBase(url, sha), `https://github.com/acme/widgets/blob/${sha}/`, url)
    }
    assert.strictEqual(
      repositoryBase("https://github.com/Effect-TS/effect.git", "v4.1.0", "packages/platform/node"),
      "https://github.com/Effect-TS/effect/blob/v4.1.0/packages/platform/node/"
    )
    assert.strictEqual(repositoryBase("gitlab:group/sub/proj", "v1"), undefined, "shorthand is owner/repo only")
    assert.strictEqual(
      repositoryBase("https://gitlab.com/group/sub/proj.git", "v1"),
      "https://gitlab.com/group/sub/proj/-/blob/v1/"
    )
    assert.strictEqual(repositoryBase("git@bitbucket.org:acme/widgets.git", "v1"), "https://bitbucket.org/acme/widgets/src/v1/")
    // hosts whose pages are not known, local repositories, unsafe refs: no link
    assert.isUndefined(repositoryBase("https://git.example.com/acme/widgets.git", sha))
    assert.isUndefined(repositoryBase("file:///srv/git/acme/widgets.git", sha))
    assert.isUndefined(repositoryBase("/srv/git/acme/widgets.git", sha))
    assert.isUndefined(repositoryBase("https://github.com/acme/widgets.git", "../../evil"))
    assert.isUndefined(repositoryBase("https://github.com/acme/widgets.git", "a b"))
  })

  it("each snippet links to its first line; a repeated first code line is found after the previous block", () => {
    const content = [
      "# Widgets", //                                               1
      "", //                                                        2
      "Widgets render dashboards of gauges and sparklines, refreshed from a feed.", // 3
      "", //                                                        4
      "## Gauges", //                                               5
      "", //                                                        6
      "```ts", //                                                   7
      "import { widgets } from \"widgets\"", //                      8
      "const gauge = widgets.gauge({ min: 0 })", //                 9
      "```", //                                                     10
      "", //                                                        11
      "## Sparklines", //                                           12
      "", //                                                        13
      "```ts", //                                                   14
      "import { widgets } from \"widgets\"", //                      15
      "const line = widgets.sparkline()", //                        16
      "```" //                                                      17
    ].join("\n")
    const snippets = split(content, "docs/guide.md")
    const base = `https://github.com/acme/widgets/blob/${sha}/`
    const linked = withSourceLinks(snippets, content, base)
    assert.deepStrictEqual(
      Object.fromEntries(linked.map((snippet) => [snippet.title, snippet.sourceUrl])),
      {
        Widgets: `${base}docs/guide.md#L3`,
        Gauges: `${base}docs/guide.md#L8`,
        Sparklines: `${base}docs/guide.md#L15`
      }
    )
    // the Source: line shows the link, and the tokens count it
    for (const snippet of linked) {
      assert.include(render(snippet), `\nSource: ${snippet.sourceUrl}\n`)
      assert.strictEqual(snippet.tokens, tokensOf(snippet))
      assert.isAbove(snippet.tokens, snippets.find((s) => s.title === snippet.title)!.tokens)
    }
    // Bitbucket's anchor; a folder's path without a line; no base: unchanged
    assert.match(withSourceLinks(snippets, content, "https://bitbucket.org/acme/widgets/src/v1/")[0]!.sourceUrl!, /#lines-\d+$/)
    assert.strictEqual(withSourceLinks(snippets, content, "/srv/docs/widgets/")[0]!.sourceUrl, "/srv/docs/widgets/docs/guide.md")
    assert.strictEqual(withSourceLinks(snippets, content, undefined), snippets)
    assert.include(render(snippets[0]!), "\nSource: docs/guide.md\n")
  })
})
