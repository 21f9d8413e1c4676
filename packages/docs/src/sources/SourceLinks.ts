/**
 * Where an agent can open a snippet (issue 19 "Source: lines an agent can open"): the repository's web
 * page of the file at the indexed commit, at the snippet's line, for git sources and for npm packages
 * whose package.json names a repository; the file's path for folders. Pure functions, no I/O.
 *
 * - A source resolves to a `linkBase` ({@link repositoryBase}, or a folder's absolute path + `/`).
 * - After a file is split, {@link withSourceLinks} finds each snippet's first line in the file and sets
 *   `sourceUrl` (`<base><path>#L<line>`; a folder: `<base><path>`, no line: a path with `:12` is not a
 *   file a tool can open), its `tokens` counting the longer `Source:` line.
 * - A web page (website, llms.txt) links to the URL it was read from, an OpenAPI document's operations
 *   to the document (its URL, or a file's absolute path): {@link withSourceUrl}.
 *
 * Hosts with a known web layout only: GitHub and Codeberg/Gitea-likes are not guessed; GitHub,
 * GitLab (`/-/blob/`) and Bitbucket (`/src/`, `#lines-`). Anything else keeps the relative path.
 */
import { type Snippet, tokensOf } from "../Splitter.ts"

/** A repository URL in any of the forms git and package.json use, as `{ host, owner, repo }`. */
export const parseRepository = (url: string): { readonly host: string; readonly path: string } | undefined => {
  const clean = url.trim().replace(/^git\+/i, "").replace(/#.*$/, "")
  const shorthand = /^(github|gitlab|bitbucket):([\w.-]+\/[\w.-]+)$/i.exec(clean) ?? /^()([\w.-]+\/[\w.-]+)$/.exec(clean)
  if (shorthand !== null) {
    const host = { github: "github.com", gitlab: "gitlab.com", bitbucket: "bitbucket.org", "": "github.com" }[
      shorthand[1]!.toLowerCase() as "github" | "gitlab" | "bitbucket" | ""
    ]
    return { host, path: shorthand[2]!.replace(/\.git$/i, "") }
  }
  // scheme://[user@]host[:port]/path, or scp-like user@host:path
  const match = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?([^/:]+)(?::\d+)?\/(.+)$/i.exec(clean) ??
    /^[\w.-]+@([\w.-]+):(.+)$/.exec(clean)
  if (match === null) return undefined
  const path = match[2]!.replace(/\/+$/, "").replace(/\.git$/i, "")
  return path.split("/").length >= 2 ? { host: match[1]!.toLowerCase(), path } : undefined
}

/**
 * The web address of `ref`'s files in a repository, ending in `/` (`directory` inside it, for a
 * package of a monorepo); undefined for a host whose layout is not known or a ref that is not safe.
 */
export const repositoryBase = (repositoryUrl: string, ref: string, directory?: string | undefined): string | undefined => {
  const repository = parseRepository(repositoryUrl)
  if (repository === undefined || !/^[\w.+-][\w./+-]*$/.test(ref) || ref.includes("..")) return undefined
  const [owner, repo] = repository.path.split("/").slice(-2)
  const inside = directory === undefined || directory.trim() === ""
    ? ""
    : `${directory.replace(/^\.?\/+|\/+$/g, "").split("/").map(encodeURIComponent).join("/")}/`
  switch (repository.host) {
    case "github.com":
      return `https://github.com/${owner}/${repo}/blob/${ref}/${inside}`
    case "gitlab.com":
      return `https://gitlab.com/${repository.path}/-/blob/${ref}/${inside}`
    case "bitbucket.org":
      return `https://bitbucket.org/${owner}/${repo}/src/${ref}/${inside}`
    default:
      return undefined
  }
}

/** `directory` of a package.json `repository` object (a package of a monorepo), if any. */
export const repositoryDirectory = (repository: unknown): string | undefined =>
  typeof repository === "object" && repository !== null &&
    typeof (repository as { directory?: unknown }).directory === "string"
    ? (repository as { directory: string }).directory
    : undefined

/** The URL of a package.json `repository` field (a string or `{ url }`). */
export const repositoryUrl = (repository: unknown): string | undefined =>
  typeof repository === "string"
    ? repository
    : typeof repository === "object" && repository !== null && typeof (repository as { url?: unknown }).url === "string"
    ? (repository as { url: string }).url
    : undefined

/** The 1-based line where `first` (a line of the snippet, trimmed) occurs in `lines`, from `from` on. */
const find = (lines: ReadonlyArray<string>, first: string, from: number): number | undefined => {
  for (let i = from; i < lines.length; i++) if (lines[i]!.trim() === first) return i + 1
  return undefined
}

/**
 * The snippets of one file (`content`) with `sourceUrl` set from `linkBase`: a URL base gets
 * `#L<line>` (`#lines-<line>` on Bitbucket), where the line is the first line of the snippet's text
 * (code: the first code line), looked for after the previous code snippet's (two code blocks often
 * open with the same import), else anywhere. No base: the snippets unchanged.
 */
export const withSourceLinks = (
  snippets: ReadonlyArray<Snippet>,
  content: string,
  linkBase: string | undefined
): ReadonlyArray<Snippet> => {
  if (linkBase === undefined) return snippets
  const isWeb = /^https?:\/\//.test(linkBase)
  const anchor = linkBase.startsWith("https://bitbucket.org/") ? "#lines-" : "#L"
  const lines = content.replace(/\r\n?/g, "\n").split("\n")
  let cursor = 0
  return snippets.map((snippet) => {
    const file = `${linkBase}${isWeb ? snippet.sourcePath.split("/").map(encodeURIComponent).join("/") : snippet.sourcePath}`
    let sourceUrl = file
    if (isWeb) {
      const first = snippet.body.split("\n").map((line) => line.trim()).find((line) => line !== "")
      const line = first === undefined
        ? undefined
        : (snippet.kind === "code" ? find(lines, first, cursor) : undefined) ?? find(lines, first, 0)
      if (line !== undefined && snippet.kind === "code") cursor = line
      if (line !== undefined) sourceUrl = `${file}${anchor}${line}`
    }
    const linked = { ...snippet, sourceUrl }
    return { ...linked, tokens: tokensOf(linked) }
  })
}

/** The snippets of one file with `sourceUrl` set to `url` (a web page's, an OpenAPI document's), their tokens counting it. */
export const withSourceUrl = (snippets: ReadonlyArray<Snippet>, url: string): ReadonlyArray<Snippet> =>
  snippets.map((snippet) => {
    const linked = { ...snippet, sourceUrl: url }
    return { ...linked, tokens: tokensOf(linked) }
  })
