/**
 * Git sources on a real database and the system `git`, with repositories made here in temporary
 * folders (no network): clone by path and by file:// URL, id and version rules, refresh after a new
 * commit, `#ref`, credentials never stored or shown, clone failures, git missing, the clone timeout,
 * and the outbound guard: loopback, private and local hosts refused before git runs (unless
 * DOCS_ALLOW_PRIVATE=true), the addresses checked pinned for git's http, redirects not followed.
 */
import { tempDir } from "@svc/platform/testing"
import { afterAll, assert, beforeAll, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { type IndexProgress, Indexer } from "../src/Indexer.ts"
import { GIT_ENV, type GitNetwork, gitLibraryId, networkOptions, pinnedNetwork, remoteOf, withoutCredentials } from "../src/sources/Git.ts"
import type { IndexFailed } from "../src/sources/Source.ts"
import { git, gitRepository, stack } from "./support.ts"


/**
 * A working repository with two docs committed and tagged v1.2.0, published to a bare repository at
 * `<tmp>/<owner>/<name>.git`; `commit` adds files and publishes them (tags too).
 */
const makeRepository = (owner: string, name: string) =>
  Effect.gen(function*() {
    const repo = yield* gitRepository(owner, name, {
      "README.md": `# ${name}\n\nGreets people in many languages, politely and with a friendly tone.\n`,
      "docs/guide.md": "# Guide\n\n## Greeting\n\nCall `greet` with a name to get a greeting back in the current language.\n",
      "CHANGELOG.md": "# Changelog\n\n## 1.2.0\n\nEverything changed in this release, as it always does.\n"
    })
    git(repo.work, "tag", "v1.2.0")
    yield* repo.push
    return repo
  })

// The indexer clones into os.tmpdir(), and the tests below count the clone folders there: this
// file gets a temp directory of its own, since other test files, run at the same time in other
// workers, clone (and remove their clones) in the shared one.
let sharedTmpdir: string | undefined
let ownTmpdir: string | undefined
beforeAll(async () => {
  sharedTmpdir = process.env["TMPDIR"]
  ownTmpdir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-test-git-tmp-"))
  process.env["TMPDIR"] = ownTmpdir
})
afterAll(async () => {
  if (sharedTmpdir === undefined) delete process.env["TMPDIR"]
  else process.env["TMPDIR"] = sharedTmpdir
  if (ownTmpdir !== undefined) await fs.rm(ownTmpdir, { recursive: true, force: true })
})

/** Temporary clone folders currently in the temp directory (this file's own, above). */
const clones = () =>
  Effect.promise(() => fs.readdir(os.tmpdir()).then((names) => names.filter((name) => name.startsWith("svc-docs-git-"))))

const withSettings = (env: Record<string, string>) => Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
/** As a developer's machine would: git servers on 127.0.0.1 allowed. */
const allowPrivate = withSettings({ DOCS_ALLOW_PRIVATE: "true" })

/** A TCP server on 127.0.0.1 that counts the connections it gets (and answers none). */
const listener = Effect.acquireRelease(
  Effect.callback<{ readonly server: net.Server; readonly sockets: Array<net.Socket> }>((resume) => {
    const sockets: Array<net.Socket> = []
    const server = net.createServer((socket) => void sockets.push(socket))
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, sockets })))
  }),
  ({ server, sockets }) =>
    Effect.callback<void>((resume) => {
      sockets.forEach((socket) => socket.destroy())
      server.close(() => resume(Effect.void))
    })
)

/** An HTTP server on 127.0.0.1 answering every request with `answer`; the paths it was asked. */
const httpServer = (answer: (request: http.IncomingMessage, response: http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly port: number; readonly asked: Array<string>; readonly server: http.Server }>((resume) => {
      const asked: Array<string> = []
      const server = http.createServer((request, response) => {
        asked.push(request.url ?? "")
        answer(request, response)
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (server.address() as net.AddressInfo).port, asked, server })))
    }),
    ({ server }) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

const failureOf = <A>(effect: Effect.Effect<A, IndexFailed | { readonly _tag: string; readonly message: string }>) =>
  Effect.map(Effect.result(effect), (result) => {
    if (Result.isSuccess(result)) throw new Error("expected a failure, the run succeeded")
    return result.failure as IndexFailed
  })

describe("git source helpers", () => {
  it("remoteOf: the host every network transport connects to, read as a URL reads it; none for local clones", () => {
    assert.deepStrictEqual(remoteOf("https://user:tok@github.com/a/b.git"), { transport: "https", hostname: "github.com", port: 443 })
    assert.deepStrictEqual(remoteOf("http://0x7f000001:8080/a/b.git"), { transport: "http", hostname: "127.0.0.1", port: 8080 })
    assert.deepStrictEqual(remoteOf("git://2130706433/a/b.git"), { transport: "git", hostname: "127.0.0.1", port: 9418 })
    assert.deepStrictEqual(remoteOf("ssh://git@[::1]:2222/a/b.git"), { transport: "ssh", hostname: "[::1]", port: 2222 })
    // a port equal to http's default is still the port written (read as http, it was dropped: the
    // address pin of https://host:80 went to 443, and curl looked the name up again; an outside sweep)
    assert.deepStrictEqual(remoteOf("https://git.example.test:80/o/r.git"), { transport: "https", hostname: "git.example.test", port: 80 })
    assert.deepStrictEqual(remoteOf("ssh://git@git.example.test:80/o/r.git"), { transport: "ssh", hostname: "git.example.test", port: 80 })
    assert.deepStrictEqual(remoteOf("git://git.example.test:80/o/r.git"), { transport: "git", hostname: "git.example.test", port: 80 })
    assert.deepStrictEqual(remoteOf("http://git.example.test:443/o/r.git"), { transport: "http", hostname: "git.example.test", port: 443 })
    assert.deepStrictEqual(remoteOf("git@localhost:a/b.git"), { transport: "ssh", hostname: "localhost", port: 22 })
    // a bracketed name or IPv4 address is that host to ssh and git: read as such
    assert.deepStrictEqual(remoteOf("ssh://git@[127.0.0.1]:2222/a/b.git"), { transport: "ssh", hostname: "127.0.0.1", port: 2222 })
    assert.deepStrictEqual(remoteOf("git://[localhost]/a/b.git"), { transport: "git", hostname: "localhost", port: 9418 })
    // a host that cannot be read is said so (and refused: it cannot be checked)
    assert.deepStrictEqual(remoteOf("https://exa mple.org/a/b.git"), { unreadable: "exa mple.org" })
    // git ends the authority at the first "/" and ssh connects after the last "@": a "?", "#" or "\\" that a
    // URL parser would end the host at (reading public.invalid) is unreadable, not public.invalid (an outside sweep cloned
    // from 127.0.0.1 with these)
    assert.deepStrictEqual(remoteOf("ssh://public.invalid?@127.0.0.1:9102/o/r.git"), { unreadable: "127.0.0.1:9102" })
    assert.deepStrictEqual(remoteOf("ssh://git@public.invalid#@127.0.0.1:9102/o/r.git"), { unreadable: "127.0.0.1:9102" })
    assert.deepStrictEqual(remoteOf("https://public.invalid\\@127.0.0.1/o/r.git"), { unreadable: "127.0.0.1" })
    assert.deepStrictEqual(remoteOf("git://public.invalid?@127.0.0.1/o/r.git"), { unreadable: "127.0.0.1" })
    // scp-like with such a bracketed host is no clone URL at all (read as a path: nothing to connect to)
    assert.isUndefined(remoteOf("git@[public.invalid?@127.0.0.1]:o/r.git"))
    assert.isUndefined(remoteOf("git@[public.invalid\\@127.0.0.1]:o/r.git"))
    assert.deepStrictEqual(remoteOf("ssh://git:pw%40x@host.example:2222/a/b.git"), { transport: "ssh", hostname: "host.example", port: 2222 })
    assert.deepStrictEqual(remoteOf("https://user:secret@exa mple.org/a/b.git"), { unreadable: "exa mple.org" }, "no password in what is shown")
    assert.isUndefined(remoteOf("file:///srv/git/a/b.git"))
    assert.isUndefined(remoteOf("/srv/git/a/b.git"))
  })

  it.effect("networkOptions: redirects off, git pinned to the addresses checked on every transport; a private answer refused", () =>
    Effect.gen(function*() {
      const publicAnswer = { allowPrivate: false, resolve: async () => [{ address: "203.0.114.7", family: 4 }, { address: "2a00:1450::1", family: 6 }] }
      assert.deepStrictEqual(
        yield* networkOptions("https://docs.example.org/acme/widgets.git", "https://docs.example.org/acme/widgets.git", publicAnswer),
        { args: ["-c", "http.followRedirects=false", "-c", "http.curloptResolve=docs.example.org:443:203.0.114.7,[2a00:1450::1]"], env: {} }
      )
      // the pin names the port git connects to, whatever the scheme's default
      assert.deepStrictEqual(
        (yield* networkOptions("https://docs.example.org:80/acme/w.git", "x", publicAnswer)).args,
        ["-c", "http.followRedirects=false", "-c", "http.curloptResolve=docs.example.org:80:203.0.114.7,[2a00:1450::1]"]
      )
      // ssh and git:// are pinned too: they were checked here and looked up again by git and ssh, so a
      // name answering public to the check and 127.0.0.1 a moment later (DNS rebinding) reached loopback
      const ssh = "ssh -o HostName='203.0.114.7' -o HostKeyAlias='docs.example.org'"
      assert.deepStrictEqual(yield* networkOptions("git@docs.example.org:acme/w.git", "x", publicAnswer), {
        args: ["-c", "http.followRedirects=false"],
        env: { GIT_SSH_COMMAND: ssh }
      })
      assert.deepStrictEqual((yield* networkOptions("ssh://git@Docs.Example.org:2222/acme/w.git", "x", publicAnswer)).env, { GIT_SSH_COMMAND: ssh })
      assert.deepStrictEqual(
        (yield* networkOptions("ssh://git@docs.example.org/acme/w.git", "x", { ...publicAnswer, sshCommand: Option.some("ssh -i /keys/deploy") })).env,
        { GIT_SSH_COMMAND: "ssh -i /keys/deploy -o HostName='203.0.114.7' -o HostKeyAlias='docs.example.org'" },
        "an operator's GIT_SSH_COMMAND keeps its options, the pin added"
      )
      assert.deepStrictEqual(yield* networkOptions("git://docs.example.org/acme/w.git", "x", publicAnswer), {
        args: ["-c", "http.followRedirects=false", "-c", "url.git://203.0.114.7:9418.insteadOf=git://docs.example.org"],
        env: {}
      })
      // a literal address needs no pin; file:// and paths are local
      assert.deepStrictEqual(yield* networkOptions("git://203.0.114.9:9000/acme/w.git", "x", publicAnswer), { args: ["-c", "http.followRedirects=false"], env: {} })
      assert.deepStrictEqual(yield* networkOptions("file:///srv/acme/w.git", "x", publicAnswer), { args: [], env: {} })
      const rebinding = { allowPrivate: false, resolve: async () => [{ address: "203.0.114.7", family: 4 }, { address: "10.0.0.5", family: 4 }] }
      const refused = yield* Effect.flip(networkOptions("https://docs.example.org/acme/w.git", "https://docs.example.org/acme/w.git", rebinding))
      assert.strictEqual(refused.category, "source_not_allowed")
      assert.match(refused.message, /^Refused to reach https:\/\/docs\.example\.org\/acme\/w\.git: docs\.example\.org resolves to an address in the private range \(set DOCS_ALLOW_PRIVATE=true to allow it\)$/)
    }))

  it.effect("git honours the pin: a name that resolves nowhere is cloned from the pinned address", () =>
    Effect.gen(function*() {
      const { asked, port } = yield* httpServer((_request, response) => response.writeHead(404).end())
      // a loopback pin made by hand (the guard would refuse it): what git does with one is what is tested
      const failed = yield* Effect.callback<boolean>((resume) => {
        execFile("git", ["-c", `http.curloptResolve=pinned.invalid:${port}:127.0.0.1`, "ls-remote", "--", `http://pinned.invalid:${port}/acme/w.git`], {
          env: { ...process.env, GIT_TERMINAL_PROMPT: "0" }
        }, (error) => resume(Effect.succeed(error !== null)))
      })
      assert.isTrue(failed, "a 404 is a failure")
      assert.include(asked, "/acme/w.git/info/refs?service=git-upload-pack")
    }).pipe(Effect.scoped))

  /** A TCP server on 127.0.0.1 that records the first bytes of each connection, then hangs up. */
  const tcpServer = Effect.acquireRelease(
    Effect.callback<{ readonly server: net.Server; readonly port: number; readonly received: Array<string> }>((resume) => {
      const received: Array<string> = []
      const server = net.createServer((socket) => {
        socket.once("data", (chunk) => {
          received.push(chunk.toString("latin1"))
          socket.destroy()
        })
        socket.on("error", () => {})
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, port: (server.address() as net.AddressInfo).port, received })))
    }),
    ({ server }) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

  /** Runs git with `network` (a pin made by pinnedNetwork) for `url`; whether it failed. */
  const runPinned = (network: GitNetwork, url: string) =>
    Effect.callback<boolean>((resume) => {
      execFile("git", [...network.args, "ls-remote", "--", url], {
        env: { ...process.env, ...GIT_ENV, ...network.env },
        timeout: 30_000
      }, (error) => resume(Effect.succeed(error !== null)))
    })

  it.effect("git and ssh honour the pin: git:// and ssh to a name that resolves nowhere reach the pinned address", () =>
    Effect.gen(function*() {
      // pins to 127.0.0.1 made by pinnedNetwork directly (the guard would refuse them): what git and ssh
      // do with the pin is what is tested; `.invalid` names never resolve, so only the pin reaches anything
      const daemon = yield* tcpServer
      const gitUrl = `git://pinned.invalid:${daemon.port}/acme/w.git`
      const gitRemote = remoteOf(gitUrl) as { transport: string; hostname: string; port: number }
      assert.isTrue(yield* runPinned(pinnedNetwork(gitUrl, gitRemote, ["127.0.0.1"]), gitUrl), "the server hangs up")
      assert.strictEqual(daemon.received.length, 1, "git connected to the pinned address")
      assert.include(daemon.received[0]!, "git-upload-pack /acme/w.git")

      const sshd = yield* tcpServer
      for (const sshUrl of [`ssh://git@pinned.invalid:${sshd.port}/acme/w.git`]) {
        const sshRemote = remoteOf(sshUrl) as { transport: string; hostname: string; port: number }
        assert.isTrue(yield* runPinned(pinnedNetwork(sshUrl, sshRemote, ["127.0.0.1"]), sshUrl), "the server hangs up")
      }
      assert.strictEqual(sshd.received.length, 1, "ssh connected to the pinned address")
      assert.match(sshd.received[0]!, /^SSH-2\.0-/)
    }).pipe(Effect.scoped))

  it("library ids from the URL's last two path segments; credentials stripped", () => {
    assert.strictEqual(gitLibraryId("https://github.com/Effect-TS/Effect.git"), "/effect-ts/effect")
    assert.strictEqual(gitLibraryId("git@github.com:owner/repo.git"), "/owner/repo")
    assert.strictEqual(gitLibraryId("ssh://git@git.example.org:2222/group/project.git"), "/group/project")
    assert.strictEqual(gitLibraryId("file:///tmp/x/acme/greeter.git"), "/acme/greeter")
    assert.strictEqual(gitLibraryId("/srv/git/acme/greeter.git/"), "/acme/greeter")
    assert.strictEqual(gitLibraryId("https://user:tok@host.example/a/b"), "/a/b")
    assert.strictEqual(gitLibraryId("git@host:repo.git"), undefined)
    assert.strictEqual(withoutCredentials("https://user:s3cr%40t@github.com/a/b.git"), "https://github.com/a/b.git")
    assert.strictEqual(withoutCredentials("https://ghp_token@github.com/a/b.git"), "https://github.com/a/b.git")
    assert.strictEqual(withoutCredentials("ssh://git:pw@host/a/b.git"), "ssh://git@host/a/b.git")
    assert.strictEqual(withoutCredentials("git@github.com:a/b.git"), "git@github.com:a/b.git")
    assert.strictEqual(withoutCredentials("https://github.com/a/b@c.git"), "https://github.com/a/b@c.git")
  })
})

// Live clock: the clone timeout is real time.
layer(stack, { excludeTestServices: true })("git sources", (it) => {
  it.effect("a bare repository by path and by file:// URL: id from the URL, version from the tag at HEAD, kind git, clone removed", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const sql = yield* SqlClient.SqlClient
      const repo = yield* makeRepository("acme", "greeter")
      const before = yield* clones()
      const progress: Array<IndexProgress> = []
      const outcome = yield* indexer.add(repo.bare, { onProgress: (event) => Effect.sync(() => progress.push(event)) })
      assert.deepStrictEqual([outcome.libraryId, outcome.version, outcome.files], ["/acme/greeter", "v1.2.0", 2])
      // a clone may take minutes: it is said before it starts, not only once it is read
      assert.deepStrictEqual(progress.slice(0, 2), [
        { _tag: "Cloning", url: repo.bare },
        { _tag: "Started", libraryId: "/acme/greeter", version: "v1.2.0", root: repo.bare }
      ])
      assert.deepStrictEqual(
        progress.filter((event) => event._tag === "FileRead").map((event) => event.path),
        ["README.md", "docs/guide.md"]
      )
      const [row] = yield* sql<{ source_kind: string; source_location: string }>`
        SELECT source_kind, source_location FROM docs.libraries WHERE id = '/acme/greeter'`
      assert.deepStrictEqual(row, { source_kind: "git", source_location: repo.bare })
      const listed = (yield* indexer.list).find((library) => library.id === "/acme/greeter")!
      assert.strictEqual(listed.source, repo.bare)
      assert.deepStrictEqual(listed.versions.map((version) => [version.version, version.state]), [["v1.2.0", "ready"]])

      const viaUrl = yield* indexer.add(`file://${repo.bare}`, { id: "/me/greeter-url" })
      assert.deepStrictEqual([viaUrl.libraryId, viaUrl.version, viaUrl.snippets], ["/me/greeter-url", "v1.2.0", outcome.snippets])
      const explicit = yield* indexer.add(`file://${repo.bare}`, { version: "2.0" })
      assert.deepStrictEqual([explicit.libraryId, explicit.version], ["/acme/greeter", "2.0"])
      assert.deepStrictEqual(yield* clones(), before, "every clone folder is removed")
    }))

  it.effect("a new commit: refresh clones again into the same version; add names it by the short hash; #ref picks a tag", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* makeRepository("acme", "farewells")
      const url = `file://${repo.bare}`
      const first = yield* indexer.add(url)
      assert.deepStrictEqual([first.libraryId, first.version, first.files], ["/acme/farewells", "v1.2.0", 2])

      const hash = yield* repo.commit(
        { "docs/farewell.md": "# Farewell\n\nCall `farewell` with a name to say goodbye in the current language.\n" },
        "second"
      )
      const refreshed = yield* indexer.refresh("/acme/farewells")
      assert.deepStrictEqual([refreshed.version, refreshed.files], ["v1.2.0", 3])
      assert.strictEqual(refreshed.snippets, first.snippets + 1)

      const untagged = yield* indexer.add(url)
      assert.match(hash, /^[0-9a-f]{7,}$/)
      assert.deepStrictEqual([untagged.version, untagged.files], [hash, 3])
      const listed = (yield* indexer.list).find((library) => library.id === "/acme/farewells")!
      assert.strictEqual(listed.defaultVersion, hash)

      const atTag = yield* indexer.add(`${url}#v1.2.0`, { id: "/acme/farewells-tagged" })
      assert.deepStrictEqual([atTag.version, atTag.files], ["v1.2.0", 2])
      const tagged = (yield* indexer.list).find((library) => library.id === "/acme/farewells-tagged")!
      assert.strictEqual(tagged.source, `${url}#v1.2.0`)
      const again = yield* indexer.refresh("/acme/farewells-tagged")
      assert.strictEqual(again.files, 2, "refresh clones the same tag")

      yield* repo.commit({ "docs/more.md": "# More\n\nA third page of documentation, tagged as a release of its own.\n" }, "third")
      git(repo.work, "tag", "v1.3.0")
      yield* repo.push
      const released = yield* indexer.add(url)
      assert.deepStrictEqual([released.version, released.files], ["v1.3.0", 4])
    }))

  it.effect("credentials in a URL are used for the clone, never stored, listed or shown in a failure", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* makeRepository("acme", "private")
      const progress: Array<IndexProgress> = []
      const outcome = yield* indexer.add(`file://user:secret@localhost${repo.bare}`, {
        onProgress: (event) => Effect.sync(() => progress.push(event))
      })
      assert.strictEqual(outcome.libraryId, "/acme/private")
      const listed = yield* indexer.list
      const library = listed.find((entry) => entry.id === "/acme/private")!
      assert.strictEqual(library.source, `file://localhost${repo.bare}`)
      assert.notInclude(JSON.stringify(listed), "secret")
      assert.notInclude(JSON.stringify(progress), "secret")
      const refreshed = yield* indexer.refresh("/acme/private")
      assert.strictEqual(refreshed.snippets, outcome.snippets)

      for (
        const url of [
          "http://user:secret@127.0.0.1:1/acme/nothing.git",
          "https://secret@127.0.0.1:1/acme/nothing.git",
          "git+http://user:secret@127.0.0.1:1/acme/nothing.git#main"
        ]
      ) {
        // private hosts allowed, so that git runs and fails and its own words are what is redacted
        const failure = yield* failureOf(indexer.add(url).pipe(allowPrivate))
        assert.strictEqual(failure.category, "clone_failed")
        assert.match(failure.message, /^git could not clone https?:\/\/127\.0\.0\.1:1\/acme\/nothing\.git(#main)?: /)
        assert.notInclude(failure.message, "secret")
        assert.notInclude(JSON.stringify(failure), "secret")
        assert.notInclude(String(failure), "secret")
      }
      // a one-letter user name is not cut out of every word (it read "git co***ld not clone")
      const shortUser = yield* failureOf(indexer.add("http://u:secret@127.0.0.1:1/acme/nothing.git").pipe(allowPrivate))
      assert.match(shortUser.message, /^git could not clone http:\/\/127\.0\.0\.1:1\/acme\/nothing\.git: /)
      assert.notInclude(shortUser.message, "***")
      assert.notInclude(shortUser.message, "secret")
      assert.notInclude(JSON.stringify(yield* indexer.list), "secret")
    }))

  it.effect("a repository without documentation is no_documents naming its URL, not the clone's temporary folder", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* makeRepository("acme", "nodocs")
      yield* Effect.promise(() => fs.rm(path.join(repo.work, "docs"), { recursive: true }))
      yield* repo.commit({ "README.md": "# x\n\nToo short.\n", "index.js": "module.exports = 1\n" }, "no docs")
      const terse = yield* failureOf(indexer.add(`file://${repo.bare}`, { id: "/acme/nodocs" }))
      assert.strictEqual(terse.category, "no_documents")
      // it named /tmp/svc-docs-git-XXXXXX/checkout, a folder removed before the message was read (and,
      // over the RPC, a path of the server's)
      assert.strictEqual(
        terse.message,
        `No documentation found in file://${repo.bare}: 1 file read, every section too short to be a snippet (prose under 60 characters and code under 8 are left out)`
      )
    }))

  it.effect("a repository that does not exist is clone_failed with git's reason; nothing is stored", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const dir = yield* tempDir("svc-docs-gitsrc-")
      const missing = path.join(dir, "acme", "missing.git")
      const byUrl = yield* failureOf(indexer.add(`file://${missing}`))
      assert.strictEqual(byUrl.category, "clone_failed")
      assert.strictEqual(
        byUrl.message,
        `git could not clone file://${missing}: '${missing}' does not appear to be a git repository`
      )
      const byPath = yield* failureOf(indexer.add(missing))
      assert.strictEqual(byPath.category, "clone_failed")
      assert.match(byPath.message, /^git could not clone .*missing\.git: /)
      assert.notInclude(byPath.message, "\n")

      const repo = yield* makeRepository("acme", "branches")
      const noBranch = yield* failureOf(indexer.add(`${repo.bare}#no-such-branch`))
      assert.strictEqual(noBranch.category, "clone_failed")
      assert.include(noBranch.message, "no-such-branch")
      const badRef = yield* failureOf(indexer.add(`${repo.bare}#--upload-pack=touch`))
      assert.strictEqual(badRef.category, "invalid_source")
      const noId = yield* failureOf(indexer.add("git@localhost:nothing.git"))
      assert.strictEqual(noId.category, "invalid_source")
      assert.include(noId.message, "--id")

      const ids = (yield* indexer.list).map((library) => library.id)
      assert.notInclude(ids, "/acme/missing")
      assert.notInclude(ids, "/acme/branches")
    }))

  it.effect("a clone from a loopback, private or local host is refused before git runs; nothing connects", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const { sockets, server } = yield* listener
      const port = (server.address() as net.AddressInfo).port
      for (
        const url of [
          `http://127.0.0.1:${port}/acme/widgets.git`,
          `https://user:secret@127.0.0.1:${port}/acme/widgets.git`,
          `git+http://127.0.0.1:${port}/acme/widgets.git#main`,
          `git://127.0.0.1:${port}/acme/widgets.git`,
          `ssh://git@127.0.0.1:${port}/acme/widgets.git`,
          `http://0x7f000001:${port}/acme/widgets.git`,
          `http://2130706433:${port}/acme/widgets.git`,
          `http://[::1]:${port}/acme/widgets.git`,
          `http://[::ffff:127.0.0.1]:${port}/acme/widgets.git`,
          `http://10.1.2.3:${port}/acme/widgets.git`,
          `http://169.254.169.254/acme/widgets.git`,
          "git@localhost:acme/widgets.git",
          `http://git.internal:${port}/acme/widgets.git`,
          // brackets around a name or an IPv4 address: ssh and git connect to it as such
          `ssh://git@[127.0.0.1]:${port}/acme/widgets.git`,
          `ssh://git@[localhost]:${port}/acme/widgets.git`,
          `git://[127.0.0.1]:${port}/acme/widgets.git`,
          "ssh://git@[10.0.0.1]/acme/widgets.git",
          "git@[::1]:acme/widgets.git",
          "git@[127.0.0.1]:acme/widgets.git"
        ]
      ) {
        const failure = yield* failureOf(indexer.add(url))
        assert.strictEqual(failure.category, "source_not_allowed", url)
        assert.match(failure.message, /^Refused to reach .*\(set DOCS_ALLOW_PRIVATE=true to allow it\)$/, url)
        assert.notInclude(failure.message, "secret")
      }
      const unreadable = yield* failureOf(indexer.add("ssh://git@[not a host]/acme/widgets.git"))
      assert.deepStrictEqual([unreadable.category, unreadable.message], [
        "source_not_allowed",
        `Refused to reach ssh://git@[not a host]/acme/widgets.git: cannot tell which host "[not a host]" is, so it cannot be checked`
      ])
      // what a URL parser ends the host at ("?", "#", "\\") git and ssh read on: public.invalid to one,
      // 127.0.0.1 to the other (an outside sweep cloned from loopback with these): unreadable, refused
      for (
        const url of [
          `ssh://public.invalid?@127.0.0.1:${port}/acme/widgets.git`,
          `git+ssh://git@public.invalid?@127.0.0.1:${port}/acme/widgets.git`,
          `ssh://public.invalid#@127.0.0.1:${port}/acme/widgets.git#main`,
          `https://public.invalid\\@127.0.0.1:${port}/acme/widgets.git`
        ]
      ) {
        const failure = yield* failureOf(indexer.add(url))
        assert.strictEqual(failure.category, "source_not_allowed", url)
        assert.include(failure.message, "so it cannot be checked", url)
      }
      // scp-like with such a bracketed host is no clone URL: a path that is not there, nothing connected to
      yield* failureOf(indexer.add(`git@[public.invalid?@127.0.0.1]:acme/widgets.git`))
      // git's remote-helper syntax runs commands (ext::): never a source, never given to git
      const helper = yield* failureOf(indexer.add("ext::sh -c touch% /tmp/svc-ext-pwned"))
      assert.deepStrictEqual([helper.category, helper.message], [
        "invalid_source",
        "ext:: (git's remote-helper syntax) is not a source: give a git URL (https, ssh, git, file) instead"
      ])
      const unresolved = yield* failureOf(indexer.add("https://widgets.invalid/acme/widgets.git"))
      assert.deepStrictEqual([unresolved.category, unresolved.message], [
        "source_not_allowed",
        "Refused to reach https://widgets.invalid/acme/widgets.git: widgets.invalid does not resolve"
      ])
      assert.strictEqual(sockets.length, 0, "git never connected")
      assert.notInclude((yield* indexer.list).map((library) => library.id), "/acme/widgets")
    }).pipe(Effect.scoped))

  it.effect("a redirect is not followed, even between hosts git may reach", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const target = yield* httpServer((_request, response) => response.writeHead(404).end())
      const redirecting = yield* httpServer((request, response) =>
        response.writeHead(301, { location: `http://127.0.0.1:${target.port}${request.url}` }).end()
      )
      const failure = yield* failureOf(indexer.add(`http://127.0.0.1:${redirecting.port}/acme/moved.git`).pipe(allowPrivate))
      assert.strictEqual(failure.category, "clone_failed")
      assert.isAbove(redirecting.asked.length, 0)
      assert.deepStrictEqual(target.asked, [], "the redirect's target was never asked")
    }).pipe(Effect.scoped))

  it.effect("git missing, and a clone that hangs stopped by DOCS_GIT_CLONE_TIMEOUT, are clear failures", () =>
    Effect.gen(function*() {
      const indexer = yield* Indexer
      const repo = yield* makeRepository("acme", "settings")
      const noGit = yield* failureOf(indexer.add(repo.bare).pipe(withSettings({ DOCS_GIT: "/nonexistent/bin/git" })))
      assert.strictEqual(noGit.category, "clone_failed")
      assert.strictEqual(
        noGit.message,
        `git is not installed (no "/nonexistent/bin/git" command found; install git, or set DOCS_GIT to its path): cannot clone ${repo.bare}`
      )

      // A server that accepts connections and never answers.
      const { server, sockets } = yield* listener
      const port = (server.address() as net.AddressInfo).port
      const before = yield* clones()
      const started = Date.now()
      const hung = yield* failureOf(
        indexer.add(`http://user:secret@127.0.0.1:${port}/acme/hung.git`).pipe(
          withSettings({ DOCS_GIT_CLONE_TIMEOUT: "1 second", DOCS_ALLOW_PRIVATE: "true" })
        )
      )
      assert.strictEqual(hung.category, "clone_failed")
      assert.strictEqual(
        hung.message,
        `git could not clone http://127.0.0.1:${port}/acme/hung.git: no result within 1s (DOCS_GIT_CLONE_TIMEOUT)`
      )
      assert.isBelow(Date.now() - started, 10_000)
      assert.isAbove(sockets.length, 0, "git did connect")
      assert.deepStrictEqual(yield* clones(), before, "the clone folder is removed after a timeout")

      const badSetting = yield* failureOf(indexer.add(repo.bare).pipe(withSettings({ DOCS_GIT_CLONE_TIMEOUT: "soon" })))
      assert.strictEqual(badSetting.category, "clone_failed")
      assert.include(badSetting.message, "DOCS_GIT_CLONE_TIMEOUT")
    }))
})
