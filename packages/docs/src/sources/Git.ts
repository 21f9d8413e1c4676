/**
 * A git repository: a clone URL (`https://…`, `ssh://…`, `git@host:owner/repo.git`, `git://…`,
 * `file://…`, `git+https://…`), a path ending in `.git` or a path to a bare repository, optionally with
 * `#<branch or tag>`. Cloned with the system `git` (`clone --depth 1`) into a temporary folder that is
 * removed when the scope closes, then read like a folder. Id from the URL's last two path segments,
 * version from the tag at HEAD else the short commit hash. Credentials in the URL are used for that
 * clone only: never stored, logged or shown.
 *
 * A clone over the network goes through the suite's outbound guard (`@svc/platform` OutboundGuard), which
 * cannot sit inside git: the host is checked first (a loopback, private or link-local address, a local
 * name, or a name resolving to one is refused, unless `DOCS_ALLOW_PRIVATE=true`), and git over http(s)
 * is then told to connect to the addresses checked and nowhere else, over every transport, so a name
 * that answers differently a moment later (DNS rebinding) is not followed: http(s) by
 * `http.curloptResolve`, `git://` by rewriting the URL to the address checked (`url.<…>.insteadOf`), ssh
 * by `-o HostName=<address checked>` (with `HostKeyAlias=<name>`, so the host key is still the name's)
 * on the ssh command git runs. Redirects are never followed (`http.followRedirects=false`: a redirect
 * could lead anywhere, credentials included).
 */
import { OutboundGuard, Settings } from "@svc/platform"
import { Config, Duration, Effect, FileSystem, Option, Path, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { describedSource } from "./Folder.ts"
import { repositoryBase } from "./SourceLinks.ts"
import { ALLOW_PRIVATE_SETTING } from "./WebFetch.ts"
import {
  checkLibraryId,
  checkVersion,
  IndexFailed,
  invalidSource,
  readPackageJson,
  repositoryId,
  type Source,
  type SourceOptions,
  VERSION
} from "./Source.ts"

/** scp-like `user@host:path`, the host a name, an address or a bracketed one (`git@[::1]:a/b.git`). */
const SCP_LIKE = /^[\w.-]+@(\[[\w.:%-]*\]|[\w.-]+):/
/** A clone URL: a URL of a git transport, or scp-like `user@host:path`. */
export const GIT_URL = new RegExp(`^((git|ssh|file|https?|git\\+(ssh|https?|file)):\\/\\/|${SCP_LIKE.source.slice(1)})`, "i")

/** A `file://` clone URL (`git+file://` too): a repository on this machine. */
export const FILE_URL = /^(git\+)?file:\/\//i

/**
 * A clone URL of another machine: never a path on this one, whatever its path part says
 * (`git@x.invalid:../../etc/x.json`). Roots.ts lets these through unconfined, so a source that reads
 * local files must not take one for a path.
 */
export const isRemoteGitUrl = (source: string): boolean => GIT_URL.test(source) && !FILE_URL.test(source)

/** A branch or tag after `#`: no option look-alikes, no `..`. */
const GIT_REF = /^\w[\w.\/+-]*$/

/**
 * Where the system `git` is, how long a clone may take, and whether private hosts may be cloned from
 * (`DOCS_GIT`, `DOCS_GIT_CLONE_TIMEOUT`, `DOCS_ALLOW_PRIVATE`, the web sources' setting).
 */
export const GitSettings = Config.all({
  binary: Config.String("DOCS_GIT").pipe(Config.withDefault("git")),
  cloneTimeout: Settings.durationSetting("DOCS_GIT_CLONE_TIMEOUT", "5 minutes"),
  allowPrivate: Config.Boolean(ALLOW_PRIVATE_SETTING).pipe(Config.withDefault(false)),
  // the ssh command git would run on its own (GIT_SSH_COMMAND, else GIT_SSH, else ssh): the address pin
  // is added to it (networkOptions)
  sshCommand: Config.option(Config.String("GIT_SSH_COMMAND")),
  sshProgram: Config.option(Config.String("GIT_SSH"))
})

/**
 * Never waits for a person: no terminal prompt for a password (fails instead), no Git Credential
 * Manager dialog; LFS pointers stay pointers (docs are not in LFS, and it would download).
 */
export const GIT_ENV = { GIT_TERMINAL_PROMPT: "0", GCM_INTERACTIVE: "never", GIT_LFS_SKIP_SMUDGE: "1" }

const URL_USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)@/i
const isSsh = (scheme: string) => /ssh/i.test(scheme)

/**
 * The URL without its credentials: `https://user:token@host/x.git` → `https://host/x.git`. An ssh URL
 * keeps its user name (`ssh://git@host/x.git`: not a secret, and needed) and loses a password.
 */
export const withoutCredentials = (url: string): string =>
  url.replace(URL_USERINFO, (_all, scheme: string, userinfo: string) =>
    isSsh(scheme) ? `${scheme}${userinfo.split(":")[0]}@` : scheme)

/** The secrets of a URL (what {@link withoutCredentials} removes), raw and decoded. */
const credentialsOf = (url: string): ReadonlyArray<string> => {
  const match = URL_USERINFO.exec(url)
  if (match === null) return []
  const userinfo = match[2]!
  const secret = isSsh(match[1]!) ? userinfo.split(":").slice(1).join(":") : userinfo
  const parts = [secret, ...secret.split(":")].filter((part) => part.length > 0)
  const decoded = parts.map((part) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return part
    }
  })
  return [...new Set([...parts, ...decoded])].sort((a, b) => b.length - a.length)
}

/** `text` with every occurrence of `word` that no letter or digit touches replaced by `by`. */
const standaloneReplaced = (text: string, word: string, by: string): string => {
  const wordChar = /[\p{L}\p{N}]/u
  let out = ""
  let from = 0
  for (let at = text.indexOf(word); at !== -1; at = text.indexOf(word, at + 1)) {
    if (at < from || wordChar.test(text[at - 1] ?? "") || wordChar.test(text[at + word.length] ?? "")) continue
    out += text.slice(from, at) + by
    from = at + word.length
  }
  return out + text.slice(from)
}

/**
 * Text (git's error output) with the credentials of `url` and of any URL in it removed. A credential
 * is replaced where it stands alone, not inside a word: as a substring, a user name `u` turned "could
 * not" into "co***ld not" and the pattern of stars told a short secret (an outside sweep).
 */
const redact = (text: string, url: string): string =>
  credentialsOf(url).reduce(
    (out, secret) => standaloneReplaced(out, secret, "***"),
    text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@'"]*)@/gi, (_all, scheme: string, userinfo: string) =>
      isSsh(scheme) ? `${scheme}${userinfo.split(":")[0]}@` : scheme)
  )

/** `/owner/repo` from the last two path segments of a clone URL or repository path, `.git` dropped. */
export const gitLibraryId = (url: string): string | undefined => {
  const clean = withoutCredentials(url).replace(/^git\+/i, "")
  const scpLike = SCP_LIKE.exec(clean)
  const repositoryPath = /^[a-z][a-z0-9+.-]*:\/\//i.test(clean)
    ? clean.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "").replace(/[?#].*$/, "")
    : scpLike !== null
    ? clean.slice(scpLike[0].length)
    : clean
  const segments = repositoryPath.split(/[/\\]+/).filter((segment) => segment !== "")
  const repo = segments.at(-1)?.replace(/\.git$/i, "")
  const owner = segments.at(-2)
  return owner === undefined || repo === undefined || repo === "" ? undefined : repositoryId(`${owner}/${repo}`)
}

/**
 * An authority the guard reads as git does: an optional user (and password), a name or an address
 * (bracketed: IPv6, or a name or IPv4 address as ssh and git take it), an optional port — nothing else.
 * Git's ssh and git transports end the authority only at the first `/` (not at `?` or `#`), ssh connects
 * to what follows the last `@`, and curl does not read `\` as `/`: `ssh://8.8.8.8?@127.0.0.1:22/x`
 * is 8.8.8.8 to a URL parser and 127.0.0.1 to ssh, so an authority with any other character is unreadable.
 */
const PLAIN_AUTHORITY = /^(?:[\w.~!$&'()*+,;=:%-]*@)?([\w.-]+|\[[\w.:%-]+\])(?::\d*)?$/

/**
 * Where a clone URL connects (none for a path or file://): git's transport, the host as URLs write it,
 * the port; or, for a network URL whose host cannot be read, the authority as written (refused: what
 * the guard cannot read, it cannot check).
 */
export const remoteOf = (url: string) => {
  const scpLike = SCP_LIKE.exec(url)
  const match = scpLike === null ? /^(https?|ssh|git):\/\/([^/]*)/i.exec(url) : null
  const transport = scpLike !== null ? "ssh" : match?.[1]?.toLowerCase()
  const written = scpLike !== null ? scpLike[1]! : match?.[2]
  if (transport === undefined || written === undefined) return undefined
  // what follows the last "@": the host ssh would reach, and never a password to show in a message
  const authority = written.slice(written.lastIndexOf("@") + 1)
  if (!PLAIN_AUTHORITY.test(written)) return { unreadable: authority }
  // ssh and git take a bracketed name or IPv4 address (`ssh://git@[127.0.0.1]:22/x`) as that host; a
  // URL only an IPv6 address: unwrapped, it is read like any other host
  const unwrapped = authority.replace(/^\[([^\]:]*)\]/, "$1")
  let parsed: URL
  let writtenPort: string
  try {
    // as an http URL, so that every transport's host is read alike: 0x7f000001, 2130706433 and 127.1
    // are 127.0.0.1 to the guard as they are to the connection
    parsed = new URL(`http://${unwrapped}`)
    // the port as written, from a scheme without a default: read as http, `https://host:80` and
    // `ssh://host:80` lost their port 80 (http's default), and the address pin went to 443 or 22
    writtenPort = new URL(`svc-remote://${unwrapped}`).port
  } catch {
    return { unreadable: authority }
  }
  const port = writtenPort !== "" ? Number(writtenPort) : ({ http: 80, https: 443, ssh: 22, git: 9418 } as const)[transport as "http"]
  return { transport, hostname: parsed.hostname, port }
}

/** How git may connect for a clone URL: `git -c` options before its command, and its environment. */
export interface GitNetwork {
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
}

const shellQuoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

/**
 * What tells git to connect for `url` to `addresses` (the guard's, for `remote`) and nowhere else, on
 * every transport (module comment): `http.curloptResolve` for http(s); for `git://`, the URL's
 * scheme and authority rewritten to the first address (`url.<pinned>.insteadOf`); for ssh, `-o
 * HostName=<first address> -o HostKeyAlias=<name>` added to the ssh command git would run
 * (`ssh`, an operator's GIT_SSH_COMMAND or GIT_SSH), so ssh's config still applies to the name and the
 * host key checked is the name's. Nothing for a literal address (nothing to look up) or no addresses.
 */
export const pinnedNetwork = (
  url: string,
  remote: { readonly transport: string; readonly hostname: string; readonly port: number },
  addresses: ReadonlyArray<string>,
  ssh: { readonly command?: string | undefined; readonly program?: string | undefined } = {}
): GitNetwork => {
  const args = ["http.followRedirects=false"]
  const env: Record<string, string> = {}
  const first = addresses[0]
  if (first !== undefined && OutboundGuard.classifyAddress(remote.hostname) === undefined) {
    const bracketed = (address: string) => address.includes(":") ? `[${address}]` : address
    if (remote.transport.startsWith("http")) {
      args.push(`http.curloptResolve=${remote.hostname}:${remote.port}:${addresses.map(bracketed).join(",")}`)
    } else if (remote.transport === "git") {
      // the scheme and authority as written (what git matches the prefix against), then the path as is
      const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(url)![0]
      args.push(`url.git://${bracketed(first)}:${remote.port}.insteadOf=${authority}`)
    } else {
      const base = ssh.command?.trim() || (ssh.program?.trim() ? shellQuoted(ssh.program.trim()) : "ssh")
      env.GIT_SSH_COMMAND = `${base} -o HostName=${shellQuoted(first)} -o HostKeyAlias=${shellQuoted(remote.hostname)}`
    }
  }
  return { args: args.flatMap((option) => ["-c", option]), env }
}

/**
 * The `git -c` options and environment under which git may connect for `url`, after the outbound guard
 * allowed its host (module comment); fails `source_not_allowed` with the guard's reason when it did not.
 */
export const networkOptions = Effect.fnUntraced(function*(
  url: string,
  shown: string,
  guard: {
    readonly allowPrivate: boolean
    readonly resolve?: OutboundGuard.Resolve | undefined
    readonly sshCommand?: Option.Option<string> | undefined
    readonly sshProgram?: Option.Option<string> | undefined
  }
) {
  const remote = remoteOf(url)
  if (remote === undefined) return { args: [], env: {} } satisfies GitNetwork
  const refused = (reason: string) =>
    new IndexFailed({ category: "source_not_allowed", message: `Refused to reach ${shown}: ${reason}` })
  if ("unreadable" in remote) {
    return yield* refused(`cannot tell which host "${remote.unreadable.slice(0, 100)}" is, so it cannot be checked`)
  }
  const allowed = yield* OutboundGuard.allowedAddresses(remote.hostname, { ...guard, setting: ALLOW_PRIVATE_SETTING })
  if ("refusal" in allowed) return yield* refused(allowed.refusal)
  return pinnedNetwork(url, remote, allowed.addresses, {
    command: guard.sshCommand === undefined ? undefined : Option.getOrUndefined(guard.sshCommand),
    program: guard.sshProgram === undefined ? undefined : Option.getOrUndefined(guard.sshProgram)
  })
})

/** The first line of git's error output that says what went wrong, without git's `fatal: ` prefix. */
const gitReason = (stderr: string): string => {
  const lines = stderr.split("\n").map((line) => line.trim()).filter((line) => line !== "")
  const line = lines.find((l) => /^(fatal|error):/i.test(l)) ?? lines.find((l) => !/^(warning|hint|Cloning into)\b/i.test(l))
  return line === undefined ? "no error output" : line.replace(/^(fatal|error):\s*/i, "")
}

interface GitSource {
  /** What git clones: as given (credentials included), `git+` dropped; a local path made absolute. */
  readonly url: string
  /** `url` without credentials, plus `#ref`: the stored location and what messages show. */
  readonly location: string
  readonly shown: string
  readonly ref: string | undefined
}

export const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner

  const isDirectory = (dir: string) =>
    fs.stat(dir).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false))

  /** A bare repository: `HEAD`, `objects/` and `refs/` at its top. */
  const isBareRepository = Effect.fnUntraced(function*(dir: string) {
    return (yield* fs.exists(path.join(dir, "HEAD")).pipe(Effect.orElseSucceed(() => false))) &&
      (yield* isDirectory(path.join(dir, "objects"))) && (yield* isDirectory(path.join(dir, "refs")))
  })

  /** The source as a git source, if it is one: a clone URL, or a path ending in `.git` or to a bare repository. */
  const gitSource = Effect.fnUntraced(function*(source: string) {
    const hash = source.lastIndexOf("#")
    const base = hash === -1 ? source : source.slice(0, hash)
    const ref = hash === -1 ? undefined : source.slice(hash + 1)
    const isUrl = GIT_URL.test(base)
    if (!isUrl && !/\.git\/?$/i.test(base) && !(yield* isBareRepository(path.resolve(base)))) {
      return undefined
    }
    const url = isUrl ? base.replace(/^git\+/i, "") : path.resolve(base)
    const shown = withoutCredentials(url)
    if (ref !== undefined && (!GIT_REF.test(ref) || ref.includes(".."))) {
      return yield* new IndexFailed({ category: "invalid_source", message: `"${ref}" after # in ${shown} is not a branch or tag name` })
    }
    return { url, shown, ref, location: ref === undefined ? shown : `${shown}#${ref}` } satisfies GitSource
  })

  /** Runs git and collects its output; `timeout` stops it (the process group is killed). */
  const runGit = (
    settings: { readonly binary: string; readonly cloneTimeout: Duration.Duration },
    args: ReadonlyArray<string>,
    onTimeout: () => IndexFailed,
    onSpawnFailure: (reason: string) => IndexFailed,
    env: Readonly<Record<string, string>> = {}
  ) =>
    Effect.scoped(Effect.gen(function*() {
      const handle = yield* spawner.spawn(ChildProcess.make(settings.binary, args, {
        env: { ...GIT_ENV, ...env },
        extendEnv: true,
        stdin: "ignore",
        forceKillAfter: "2 seconds"
      }))
      const [stdout, stderr, exitCode] = yield* Effect.all(
        [
          handle.stdout.pipe(Stream.decodeText(), Stream.mkString),
          handle.stderr.pipe(Stream.decodeText(), Stream.mkString),
          handle.exitCode
        ],
        { concurrency: "unbounded" }
      )
      return { exitCode: Number(exitCode), stdout, stderr }
    })).pipe(
      // The error's own message quotes the command line, URL and credentials included: never shown.
      Effect.mapError((error) =>
        onSpawnFailure(
          error.reason._tag === "NotFound" && error.reason.method === "spawn"
            ? `git is not installed (no "${settings.binary}" command found; install git, or set DOCS_GIT to its path)`
            : `could not run ${settings.binary} (${error.reason._tag}${"syscall" in error.reason && error.reason.syscall ? `, ${error.reason.syscall}` : ""})`
        )
      ),
      Effect.timeoutOrElse({ duration: settings.cloneTimeout, orElse: () => Effect.fail(onTimeout()) })
    )

  /** Clones into a temporary folder (removed when the scope closes); the checkout and its version. */
  const clone = Effect.fnUntraced(function*(git: GitSource, version: string | undefined, onFetch: SourceOptions["onFetch"]) {
    const cloneFailed = (message: string) => new IndexFailed({ category: "clone_failed", message: redact(message, git.url) })
    const settings = yield* GitSettings.pipe(
      Effect.mapError((error) => cloneFailed(`git settings (DOCS_GIT, DOCS_GIT_CLONE_TIMEOUT): ${error.message}`))
    )
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "svc-docs-git-" }).pipe(
      Effect.mapError((error) => new IndexFailed({ category: "read_failed", message: `Cannot create a temporary folder for the clone: ${error.message}` }))
    )
    const checkout = path.join(dir, "checkout")
    const git_ = (args: ReadonlyArray<string>, env?: Readonly<Record<string, string>>) =>
      runGit(
        settings,
        args,
        () => cloneFailed(`git could not clone ${git.location}: no result within ${Duration.format(settings.cloneTimeout)} (DOCS_GIT_CLONE_TIMEOUT)`),
        (reason) => cloneFailed(`${reason}: cannot clone ${git.location}`),
        env
      )
    const network = yield* networkOptions(git.url, git.location, settings)
    if (onFetch !== undefined) yield* onFetch({ _tag: "Cloning", url: git.location })
    const cloned = yield* git_([
      ...network.args,
      "clone", "--quiet", "--depth", "1", ...(git.ref === undefined ? [] : ["--branch", git.ref]), "--", git.url, checkout
    ], network.env)
    if (cloned.exitCode !== 0) {
      return yield* cloneFailed(`git could not clone ${git.location}: ${gitReason(cloned.stderr)}`)
    }
    // The commit, for links to the files as they were indexed (SourceLinks.ts).
    const head = yield* git_(["-C", checkout, "rev-parse", "HEAD"])
    const commit = head.stdout.trim()
    if (head.exitCode !== 0 || !/^[0-9a-f]{40,64}$/.test(commit)) {
      return yield* cloneFailed(`git cloned ${git.location} but cannot read its HEAD: ${gitReason(head.stderr)}`)
    }
    if (version !== undefined) return { root: checkout, version, commit }
    // The tag at HEAD (the highest if several name a valid version), else the short commit hash.
    const tags = yield* git_(["-C", checkout, "tag", "--points-at", "HEAD", "--sort=-version:refname"])
    const tag = tags.stdout.split("\n").map((line) => line.trim()).find((line) => line !== "" && VERSION.test(line))
    if (tag !== undefined) return { root: checkout, version: tag, commit }
    const short = yield* git_(["-C", checkout, "rev-parse", "--short", "HEAD"])
    return { root: checkout, version: short.stdout.trim() || commit.slice(0, 7), commit }
  })

  const resolve = Effect.fnUntraced(function*(source: string, options: SourceOptions) {
    const git = yield* gitSource(source)
    if (git === undefined) return undefined
    const libraryId = (options.id ?? gitLibraryId(git.url) ?? "").replace(/\/+$/, "")
    if (libraryId === "") {
      return yield* invalidSource(`Cannot tell a library id (/owner/repo) from ${git.location}: pass --id /owner/repo`)
    }
    yield* checkLibraryId(libraryId)
    if (options.version !== undefined) yield* checkVersion(options.version)
    const { commit, root, version } = yield* clone(git, options.version, options.onFetch)
    const pkg = yield* readPackageJson(root).pipe(Effect.provideService(FileSystem.FileSystem, fs), Effect.provideService(Path.Path, path))
    const described = yield* describedSource(pkg, { kind: "git", location: git.location, root, libraryId, version }, options).pipe(
      Effect.provideService(FileSystem.FileSystem, fs),
      Effect.provideService(Path.Path, path)
    )
    // a repository on a host whose pages are known: its files at the commit cloned (else relative paths)
    return { ...described, linkBase: repositoryBase(git.shown, commit) }
  })

  return { kind: "git", resolve } satisfies Source
})
