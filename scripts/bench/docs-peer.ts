/**
 * The peer itself beside `bench:docs`: docs-mcp-server (github.com/arabold/docs-mcp-server), full-text only,
 * asked the evaluation set's questions over the folder corpora (fastify, pino, got, nestjs, hono, execa,
 * prettier, and undici's README and docs/), through its own MCP server's `search_docs` tool. It writes the
 * files each answer names, in order, to a JSON file that `bench:docs` reads with
 * `BENCH_DOCS_PEER_RESULTS=<file>` and scores like svc's answers (docs-evaluate.ts).
 *
 * The peer is not on the npm registry this machine reaches, so it is built from its repository
 * (`corpora/README.md`, "The peer itself", says how). Then:
 *
 *   node scripts/bench/docs-peer.ts --peer /tmp/peer/src --store /tmp/peer/store [--index [--only a,b]] > /tmp/peer/results.json
 *
 * `--index` first indexes each corpus into the peer's store with its own `scrape` command (file:// URLs);
 * with `--only`, just the corpora named (one added to the set, the others' indexes kept). Every question
 * of every corpus the store holds is asked either way.
 * No embedding model is configured (`embeddingModel: ""` in the config this writes, no OPENAI_API_KEY), so
 * the peer ranks by SQLite FTS5 alone, as the issue's outside measurement ran it. Progress goes to stderr.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { corpora, type EvalCorpus, questions } from "./docs-eval.ts"

const argument = (name: string) => {
  const at = process.argv.indexOf(name)
  return at < 0 ? undefined : process.argv[at + 1]
}
const peerDir = argument("--peer")
const store = argument("--store")
if (peerDir === undefined || store === undefined) {
  console.error("usage: node scripts/bench/docs-peer.ts --peer <docs-mcp-server build> --store <its data folder> [--index]")
  process.exit(2)
}
const entry = path.join(peerDir, "dist", "index.js")
/** The peer's default `limit` (its MCP tool and CLI), and a larger one: about as many files as svc's answer (~7). */
const LIMITS = [5, 10] as const

/** The root a corpus is indexed from: the folder, or for undici a copy of its README and docs/ (the package holds code too). */
const rootOf = (corpus: EvalCorpus, scratch: string): string => {
  if (corpus.kind === "folder") return corpus.folder
  const copy = path.join(scratch, corpus.name)
  fs.rmSync(copy, { recursive: true, force: true })
  fs.mkdirSync(copy, { recursive: true })
  fs.copyFileSync(path.join(corpus.folder, "README.md"), path.join(copy, "README.md"))
  fs.cpSync(path.join(corpus.folder, "docs"), path.join(copy, "docs"), { recursive: true, filter: (from) => fs.statSync(from).isDirectory() || from.endsWith(".md") })
  return copy
}

const main = async () => {
  const scratch = path.join(store, "corpora")
  const measured = corpora().filter((corpus) => corpus.present && (corpus.kind === "folder" || corpus.name === "undici"))
  const roots = new Map(measured.map((corpus) => [corpus.name, rootOf(corpus, scratch)]))
  const config = path.join(store, "config.yaml")
  fs.mkdirSync(store, { recursive: true })
  fs.writeFileSync(config, [
    "app:", `  storePath: ${store}`, "  telemetryEnabled: false", '  embeddingModel: ""',
    "scraper:", "  maxPages: 5000", "  maxDepth: 20", "  security:", "    network:", "      mode: allowlist", "      allowedHosts: []",
    "    fileAccess:", "      mode: allowedRoots", "      allowedRoots:", ...[...roots.values()].map((root) => `        - ${root}`), ""
  ].join("\n"))
  const env: Record<string, string> = {
    ...process.env as Record<string, string>,
    DOCS_MCP_CONFIG: config,
    DOCS_MCP_STORE_PATH: store,
    DOCS_MCP_TELEMETRY: "false",
    // Local files need no browser; without this the peer tries to download one at every start.
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: "1"
  }
  delete env.OPENAI_API_KEY

  if (process.argv.includes("--index")) {
    const only = argument("--only")?.split(",")
    for (const [name, root] of roots) {
      if (only !== undefined && !only.includes(name)) continue
      console.error(`indexing ${name} from ${root}`)
      // The peer's better-sqlite3 now and then aborts at exit on Node 24 (an assertion in a statement's
      // destructor, seen once in five runs): a scrape is simply run again.
      for (let attempt = 1;; attempt++) {
        try {
          execFileSync(process.execPath, [entry, "scrape", name, `file://${root}`, "--max-pages", "5000", "--max-depth", "20"], { env, stdio: ["ignore", "ignore", "inherit"] })
          break
        } catch (error) {
          if (attempt === 3) throw error
          console.error(`scraping ${name} failed (attempt ${attempt}), again`)
        }
      }
    }
  }

  const client = new Client({ name: "svc-bench-docs-peer", version: "1.0.0" })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [entry, "mcp", "--protocol", "stdio", "--read-only", "--quiet"], env, stderr: "ignore" }))
  /** The files of the peer's answer in the order it names them (a file's chunks come back as several results). */
  const filesOf = async (corpus: string, question: string, limit: number) => {
    const answer = await client.callTool({ name: "search_docs", arguments: { library: corpus, query: question, limit } })
    const text = (answer.content as Array<{ text?: string }>).map((part) => part.text ?? "").join("")
    if (answer.isError) throw new Error(`${corpus}: ${text}`)
    const root = `file://${roots.get(corpus)!.replace(/\/?$/, "/")}`
    const urls = [...text.matchAll(/^-{60}\nResult \d+: (\S+)$/gm)].map((match) => match[1]!.split("#")[0]!)
    return [...new Set(urls.map((url) => url.startsWith(root) ? decodeURIComponent(url.slice(root.length)) : url))]
  }
  const answers: Array<{ id: string; files_limit5: Array<string>; files_limit10: Array<string> }> = []
  for (const q of questions().filter((q) => roots.has(q.corpus))) {
    const [five, ten] = [await filesOf(q.corpus, q.question, LIMITS[0]), await filesOf(q.corpus, q.question, LIMITS[1])]
    answers.push({ id: q.id, files_limit5: five, files_limit10: ten })
    if (answers.length % 50 === 0) console.error(`asked ${answers.length} questions`)
  }
  await client.close()
  const version = JSON.parse(fs.readFileSync(path.join(peerDir, "package.json"), "utf8")).version
  console.log(JSON.stringify({ peer: `docs-mcp-server ${version}, full-text only`, answers }))
}

await main()
