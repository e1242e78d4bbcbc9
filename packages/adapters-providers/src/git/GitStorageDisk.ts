import { NodeStream } from "@effect/platform-node"
import { Errors, Git, Kernel } from "@hostplane/core"
import { Clock, Config, Deferred, Effect, Fiber, Layer, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Path from "node:path"
import { inDataDir } from "../DataDir.ts"
import * as SmallSpawn from "../SmallSpawn.ts"
import {
  type FetchCacheOptions,
  isFreshFetch,
  type KeptAnswer,
  makeFetchCache,
  pktLines,
  refsDigest
} from "./FetchCache.ts"

/**
 * Options of the disk storage; `gitBinary` is the `git` to run (tests point it at a missing one), `fetchCache` the
 * limits of the answers kept for fresh fetches.
 */
export interface GitStorageDiskOptions {
  readonly gitBinary?: string
  readonly fetchCache?: FetchCacheOptions
}

const zeroId = /^0+$/u

// Objects a ref ever named are kept: nothing is pruned, and any object id may be fetched (decisions.md part 11).
const repoConfig = `[gc]
\tpruneExpire = never
\treflogExpire = never
\treflogExpireUnreachable = never
[core]
\tlogAllRefUpdates = always
[receive]
\tautogc = false
\tfsckObjects = true
[uploadpack]
\tallowAnySHA1InWant = true
\tallowFilter = true
`

// A push's pack is kept as git received it (never exploded into loose objects): serving reuses its compressed objects
// as they are, where loose ones would be compressed again and tried as deltas on every clone (13 s instead of 1 s
// for a 50 MiB pack). Given on the command line so repositories created before this setting get it too.
const transportConfig = ["-c", "receive.unpackLimit=1"]

// After a push: one pack of every object (reachable or not: `--keep-unreachable` prunes nothing) with a reachability
// bitmap, so clones and fetches reuse it whole instead of walking history and merging packs.
const repackArgs = ["repack", "-a", "-d", "-q", "--keep-unreachable", "--write-bitmap-index"]

/**
 * Kills an interrupted git command's whole process group (it runs `detached`, in a group of its own) and waits for git
 * to exit: a repack killed alone leaves its pack-objects writing into the repository, past a shutdown and into
 * whatever removes the folder next.
 */
const stopGroup = (running: SmallSpawn.SmallExec) =>
  Effect.promise(() => {
    running.kill("SIGKILL", { group: true })
    return running.result
  })

/** Stops a child still running when its scope ends, and closes this side of its pipes: nobody reads them any more. */
const stop = (child: SmallSpawn.SmallChild) =>
  Effect.sync(() => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill("SIGKILL")
    for (const stream of child.stdio) stream?.destroy()
  })

// git reports what a push changed to its post-receive hook: old, new and ref name per line. The hook hands them to
// the server on file descriptor 3 (which git passes down from its own), ended by a line `end`, and prints what the
// server answers on descriptor 4: git relays a hook's output to the pusher as `remote:` lines. The push waits for
// that answer (a deploy on push), and the hook exits 0 whatever it is, so nothing there fails a push.
const postReceive = `#!/bin/sh
[ -n "$HOSTPLANE_PUSH_CHANNEL" ] || exit 0
{ cat; echo end; } >&3
cat <&4
exit 0
`

const unreachable = (cause: unknown) =>
  new Errors.GitUnreachable({ message: `git storage unreachable: ${(cause as Error)?.message ?? String(cause)}` })

const unavailable = () => new Errors.GitUnavailable({ message: "the git binary is not available" })

/** git's refusal of a request, in its own words without the `fatal: ` prefix. */
const refusedBy = (stderr: string) =>
  new Git.GitRefused({ message: stderr.replace(/^fatal: /mu, "").trim() || "git refused the request" })

/** An answer already whole in memory (a kept advertisement or ref list), as a finished git process. */
const answered = (bytes: Uint8Array): Git.GitProcess => ({
  output: Stream.make(bytes),
  exitCode: Effect.succeed(0),
  messages: Effect.succeed("")
})

const isMissing = (cause: unknown) => (cause as NodeJS.ErrnoException)?.code === "ENOENT"

/**
 * git's strict ISO 8601 date as an RFC 3339 UTC time; a date git stores but RFC 3339 cannot hold (after year 9999, as a
 * pushed commit may carry) stays as git prints it.
 */
const utcOrAsPrinted = (date: string): string => {
  const millis = Date.parse(date)
  return Number.isNaN(millis) ? date : new Date(millis).toISOString()
}

interface Ran {
  readonly code: number
  readonly stdout: Buffer
  readonly stderr: string
}

/**
 * `GitStorage` on a local folder: one bare repository per repo id (`<root>/<id>.git`), every operation through the
 * real `git` binary. Transport services stream: the request is piped into git's stdin and its stdout is read as it
 * comes, so a pack of any size passes with flat memory.
 */
export const layer = (root: string, options: GitStorageDiskOptions = {}) =>
  Layer.effect(
    Git.GitStorage,
    Effect.gen(function* () {
      const gitBinary = options.gitBinary ?? "git"
      const path = yield* Config.String("PATH").pipe(Config.withDefault("/usr/local/bin:/usr/bin:/bin"))
      const hooks = Path.join(root, ".hooks")
      const scratch = Path.join(root, ".tmp")
      const baseEnv = { PATH: path, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0" }
      const dirOf = (id: string) => Path.join(root, `${id}.git`)
      const fetchCacheDir = Path.join(root, ".fetch-cache")

      const prepared = yield* Effect.cached(
        Effect.tryPromise({
          try: async () => {
            await Fs.mkdir(hooks, { recursive: true })
            await Fs.mkdir(scratch, { recursive: true })
            await Fs.mkdir(fetchCacheDir, { recursive: true })
            await Fs.writeFile(Path.join(hooks, "post-receive"), postReceive, { mode: 0o755 })
          },
          catch: unreachable
        })
      )

      // git runs from the small spawning helper (SmallSpawn.ts): a fork of this server costs more than the command.
      const git = (args: ReadonlyArray<string>, cwd?: string, env: Record<string, string> = {}, input?: Uint8Array) =>
        Effect.flatMap(prepared, () =>
          Effect.callback<Ran, Errors.GitUnavailable | Errors.GitUnreachable>((resume) => {
            const running = SmallSpawn.exec(gitBinary, args, {
              cwd,
              env: { ...baseEnv, ...env },
              input,
              maxBuffer: 256 * 1024 * 1024,
              detached: true
            })
            void running.result.then(({ error, stdout, stderr }) => {
              const code = error?.code
              // Either the binary or the folder is missing; the folder is checked first by every caller.
              if (code === "ENOENT") resume(Effect.fail(unavailable()))
              else if (error !== null && typeof code === "string") resume(Effect.fail(unreachable(error)))
              else
                resume(Effect.succeed({ code: typeof code === "number" ? code : 0, stdout, stderr: stderr.toString() }))
            })
            return stopGroup(running)
          })
        )

      const gitOk = (args: ReadonlyArray<string>, cwd: string) =>
        Effect.flatMap(git(args, cwd), (ran) =>
          ran.code === 0 ? Effect.succeed(ran.stdout) : Effect.fail(unreachable(new Error(ran.stderr.trim())))
        )

      const exists = (id: string) =>
        Effect.flatMap(prepared, () =>
          Effect.tryPromise({
            try: () =>
              Fs.stat(dirOf(id)).then(
                () => true,
                (cause) => (isMissing(cause) ? false : Promise.reject(cause))
              ),
            catch: unreachable
          })
        )

      /** Creates the bare repository beside its final name and moves it in, so concurrent first uses agree. */
      const ensure = (id: string, defaultBranch: string) =>
        Effect.gen(function* () {
          if (yield* exists(id)) return
          const temp = Path.join(scratch, `${id}-${randomBytes(6).toString("hex")}.git`)
          const ran = yield* git(["init", "--bare", "--quiet", `--initial-branch=${defaultBranch}`, temp])
          if (ran.code !== 0) return yield* unreachable(new Error(ran.stderr.trim()))
          yield* Effect.tryPromise({
            try: async () => {
              await Fs.appendFile(Path.join(temp, "config"), repoConfig)
              await Fs.rm(Path.join(temp, "hooks"), { recursive: true, force: true })
              await Fs.rename(temp, dirOf(id)).catch(async (cause) => {
                await Fs.rm(temp, { recursive: true, force: true })
                if (
                  !(await Fs.stat(dirOf(id)).then(
                    () => true,
                    () => false
                  ))
                )
                  throw cause
              })
            },
            catch: unreachable
          })
        })

      /**
       * git with stdin and stdout piped and its stderr collected (`collected` once it exited), and for a push the
       * hook's channel: fd 3 from it, fd 4 to it; or with a socket as its stdout, which it then writes into itself.
       */
      const spawnGit = (
        args: ReadonlyArray<string>,
        env: Record<string, string>,
        channel = false,
        stdout: Net.Socket | undefined = undefined
      ) =>
        Effect.flatMap(prepared, () =>
          Effect.callback<SmallSpawn.SmallChild, Errors.GitUnavailable | Errors.GitUnreachable>((resume) => {
            const child = SmallSpawn.spawn(gitBinary, args, {
              env: { ...baseEnv, ...env },
              stdio: channel ? ["pipe", "pipe", "collect", "pipe", "pipe"] : ["pipe", stdout ?? "pipe", "collect"]
            })
            child.once("error", (cause) => resume(Effect.fail(isMissing(cause) ? unavailable() : unreachable(cause))))
            child.once("spawn", () => resume(Effect.succeed(child)))
          })
        )

      /** Whether the repository is one pack with a bitmap and nothing loose: then a repack would change nothing. */
      const packed = (id: string) =>
        Effect.promise(async () => {
          const objects = Path.join(dirOf(id), "objects")
          const names = await Fs.readdir(objects).catch(() => [] as Array<string>)
          if (names.some((name) => /^[0-9a-f]{2}$/u.test(name))) return false
          const packs = await Fs.readdir(Path.join(objects, "pack")).catch(() => [] as Array<string>)
          return (
            packs.filter((name) => name.endsWith(".pack")).length === 1 &&
            packs.some((name) => name.endsWith(".bitmap"))
          )
        })

      // One repack at a time per repository, in the background; a push during one asks for another after it.
      const layerScope = yield* Effect.scope
      const repacking = new Map<string, { again: boolean; fiber?: Fiber.Fiber<void> }>()
      const repackLoop = (id: string): Effect.Effect<void> =>
        Effect.gen(function* () {
          if (!(yield* packed(id))) yield* Effect.ignore(git(repackArgs, dirOf(id)))
          const state = repacking.get(id)
          if (state?.again === true) {
            state.again = false
            return yield* repackLoop(id)
          }
          repacking.delete(id)
        })
      const maintain = (id: string) =>
        Effect.suspend(() => {
          const running = repacking.get(id)
          if (running !== undefined) {
            running.again = true
            return Effect.void
          }
          const state: { again: boolean; fiber?: Fiber.Fiber<void> } = { again: false }
          repacking.set(id, state)
          return Effect.map(Effect.forkIn(repackLoop(id), layerScope), (fiber) => {
            state.fiber = fiber
          })
        })

      /** What the post-receive hook writes on fd 3: the ref lines, then `end`. */
      const readHookReport = (child: SmallSpawn.SmallChild) =>
        Effect.callback<string>((resume) => {
          const from = child.stdio[3] as NodeJS.ReadableStream
          let text = ""
          const onData = (chunk: Buffer) => {
            text += chunk.toString()
            if (/(^|\n)end\n$/u.test(text)) {
              from.off("data", onData)
              resume(Effect.succeed(text.replace(/(^|\n)end\n$/u, "$1")))
            }
          }
          from.on("data", onData)
          from.on("error", () => {})
          return Effect.sync(() => from.off("data", onData))
        }).pipe(
          Effect.map((text): ReadonlyArray<Git.RefChange> =>
            text
              .split("\n")
              .map((line) => line.trim().split(" "))
              .filter((parts) => parts.length === 3)
              .map(([old, next, ref]) => ({
                ref: ref!,
                old: zeroId.test(old!) ? null : old!,
                new: zeroId.test(next!) ? null : next!
              }))
          )
        )

      /**
       * Protocol v2 capability advertisements by repository and protocol request. In v2 the advertisement names no ref
       * (`ls-refs` does): it is the git binary's capabilities under the repository's configuration, which only this
       * storage writes (at creation), so it is the same on every request. Each smart HTTP clone or fetch starts with
       * it, and answering it from memory spares a git process per clone: on a busy machine a process start is tens of
       * milliseconds before the pack's first byte (bench/README.md, bench:git).
       */
      const advertisements = new Map<string, Uint8Array>()
      const advertisementsKept = 1024

      const advertiseV2 = (repoId: Kernel.RepoId, protocol: string) =>
        Effect.gen(function* () {
          const key = `${repoId}\0${protocol}`
          let bytes = advertisements.get(key)
          if (bytes === undefined) {
            const args = [...transportConfig, "upload-pack", "--stateless-rpc", "--advertise-refs", dirOf(repoId)]
            const ran = yield* git(args, undefined, { GIT_PROTOCOL: protocol })
            if (ran.code !== 0 || ran.stdout.length === 0) {
              return yield* refusedBy(ran.stderr)
            }
            bytes = new Uint8Array(ran.stdout)
            if (advertisements.size >= advertisementsKept) advertisements.delete(advertisements.keys().next().value!)
            advertisements.set(key, bytes)
          }
          return answered(bytes)
        })

      const fetchCache = makeFetchCache(fetchCacheDir, options.fetchCache)
      const gitVersion = yield* Effect.cached(Effect.map(git(["--version"]), (ran) => ran.stdout.toString().trim()))

      /** A helper program (`cat`, `tee`) on the given stdio, stopped with the scope if still running. */
      const spawnTool = (
        command: string,
        args: ReadonlyArray<string>,
        stdio: [number | "pipe", Net.Socket | "pipe", "ignore"]
      ) =>
        Effect.acquireRelease(
          Effect.callback<
            { readonly child: SmallSpawn.SmallChild; readonly closed: Deferred.Deferred<number> },
            Errors.GitUnreachable
          >((resume) => {
            const child = SmallSpawn.spawn(command, args, { env: baseEnv, stdio })
            const closed = Deferred.makeUnsafe<number>()
            child.once("close", (code) => Deferred.doneUnsafe(closed, Effect.succeed(code ?? 128)))
            child.once("error", (cause) => resume(Effect.fail(unreachable(cause))))
            child.once("spawn", () => resume(Effect.succeed({ child, closed })))
          }),
          ({ child }) => stop(child)
        )

      /** Answers being recorded by this process, by their name in the fetch cache: done once kept or dropped. */
      const recording = new Map<string, Deferred.Deferred<void>>()

      /**
       * A fresh fetch answered from the fetch cache: the kept answer copied into the client's connection by `cat` when
       * there is one and the run has a socket (smart HTTP's direct path), or handed over opened as the run's native
       * output for the caller to send from its own process (SSH, which encrypts every byte anyway); otherwise git's
       * output passes through `tee`, which writes it into the connection (or a pipe the caller reads) and into a draft
       * that is kept once both ended well on unchanged refs. Undefined when the request is not one whose answer is
       * kept (then git answers as usual).
       */
      const cachedFetch = (
        repoId: Kernel.RepoId,
        args: ReadonlyArray<string>,
        env: Record<string, string>,
        request: Uint8Array,
        socket: Net.Socket | undefined,
        input: Stream.Stream<Uint8Array, unknown>
      ) =>
        Effect.gen(function* () {
          const lines = pktLines(request)
          if (lines === undefined || !isFreshFetch(lines)) return undefined
          const refs = yield* Effect.promise(() => refsDigest(dirOf(repoId)))
          if (refs === undefined) return undefined
          // The same git under the same configuration (given on its command line) answers the same request alike.
          const digest = fetchCache.requestDigest(`${yield* gitVersion}\0${args.join("\0")}`, request)
          const name = `${repoId}.${refs}.${digest}`
          // A follower of the same request being answered by git here waits for that answer to be kept (or dropped,
          // when its git failed or its client left: then one follower records its own).
          const worth = yield* Effect.promise(() => fetchCache.worthKeeping(dirOf(repoId)))
          let kept: KeptAnswer | undefined
          while (worth) {
            const leader = recording.get(name)
            if (leader !== undefined) {
              yield* Deferred.await(leader)
              continue
            }
            const now = yield* Clock.currentTimeMillis
            kept = yield* Effect.promise(() => fetchCache.open(repoId, refs, digest, now))
            if (kept !== undefined || !recording.has(name)) break
          }
          if (kept !== undefined && socket === undefined) {
            yield* Effect.addFinalizer(() => Effect.promise(() => kept.fd.close().catch(() => {})))
            yield* Stream.runDrain(input).pipe(Effect.orDie)
            const answer: Git.GitProcess = {
              output: NodeStream.fromReadable<Uint8Array, Errors.GitUnreachable>({
                evaluate: () => kept.fd.createReadStream({ start: 0, autoClose: false }),
                onError: unreachable
              }),
              nativeOutput: kept,
              exitCode: Effect.succeed(0),
              messages: Effect.succeed("")
            }
            return answer
          }
          if (kept !== undefined && socket !== undefined) {
            // The input's first step writes the response head; git would read the request, which is already known.
            const cat = yield* Stream.runDrain(input).pipe(
              Effect.orDie,
              Effect.andThen(spawnTool("cat", [], [kept.fd.fd, socket, "ignore"])),
              Effect.ensuring(Effect.promise(() => kept.fd.close().catch(() => {})))
            )
            const answer: Git.GitProcess = {
              output: Stream.drain(Stream.fromEffect(Deferred.await(cat.closed))),
              wroteToSocket: true,
              exitCode: Deferred.await(cat.closed),
              messages: Effect.succeed("")
            }
            return answer
          }
          if (!worth) return undefined
          // Nothing yielded since the loop saw no answer and no leader: this run records it, the next ones follow.
          const recorded = Deferred.makeUnsafe<void>()
          recording.set(name, recorded)
          const release = Effect.sync(() => {
            if (recording.get(name) === recorded) recording.delete(name)
            Deferred.doneUnsafe(recorded, Effect.void)
          })
          const draft = fetchCache.draft(repoId, refs, digest)
          const tee = yield* spawnTool("tee", [draft], ["pipe", socket ?? "pipe", "ignore"]).pipe(
            Effect.onError(() => release)
          )
          const child = yield* Effect.acquireRelease(spawnGit(args, env, false, tee.child.stdin!), stop).pipe(
            Effect.onError(() => release)
          )
          // git holds the pipe's writing end now: tee sees its end when git exits.
          tee.child.stdin!.destroy()
          const exited = yield* Deferred.make<number>()
          let stderr = ""
          child.once("close", (code) => {
            stderr = child.collected.toString()
            Deferred.doneUnsafe(exited, Effect.succeed(code ?? 128))
          })
          child.stdin!.on("error", () => {})
          yield* Stream.runForEach(input, (chunk) =>
            Effect.callback<void>((resume) => {
              if (child.stdin!.destroyed || child.stdin!.writableEnded) return resume(Effect.void)
              if (child.stdin!.write(chunk)) resume(Effect.void)
              else child.stdin!.once("drain", () => resume(Effect.void))
            })
          ).pipe(
            Effect.matchEffect({
              onSuccess: () => Effect.sync(() => child.stdin!.end()),
              onFailure: () => Effect.sync(() => child.kill("SIGKILL"))
            }),
            Effect.forkScoped
          )
          const ended = Effect.zipWith(Deferred.await(exited), Deferred.await(tee.closed), (git, copy) =>
            git === 0 ? copy : git
          )
          // Kept only when git answered, tee copied all of it, and no push moved a ref meanwhile.
          yield* Effect.all([ended, Clock.currentTimeMillis]).pipe(
            Effect.flatMap(([code, now]) =>
              Effect.promise(() =>
                (async () => {
                  if (code === 0 && (await refsDigest(dirOf(repoId))) === refs) {
                    await fetchCache.keep(repoId, refs, digest, draft, now)
                  } else await fetchCache.unlink(draft)
                })().catch(() => fetchCache.unlink(draft))
              )
            ),
            Effect.ensuring(release),
            Effect.forkIn(layerScope)
          )
          if (socket === undefined) {
            const copied = tee.child.stdout!
            const answer: Git.GitProcess = {
              output: NodeStream.fromReadable<Uint8Array, Errors.GitUnreachable>({
                evaluate: () => copied,
                onError: unreachable
              }),
              nativeOutput: copied,
              exitCode: ended,
              messages: Effect.sync(() => stderr)
            }
            return answer
          }
          const answer: Git.GitProcess = {
            output: Stream.drain(Stream.fromEffect(ended)),
            wroteToSocket: true,
            exitCode: ended,
            messages: Effect.sync(() => stderr)
          }
          return answer
        })

      /**
       * Protocol v2 `ls-refs` answers by repository, refs and request: the answer is a function of the refs and the
       * request alone (names, ids, symbolic targets, peeled tags), so it is kept for the refs it was read on. Every
       * smart HTTP clone and fetch asks it before its pack, and answering it from memory spares a git process there.
       */
      const refLists = new Map<string, Uint8Array>()
      const refListsKept = 256
      const refListKeptBytes = 64 * 1024

      const listRefs = (
        repoId: Kernel.RepoId,
        args: ReadonlyArray<string>,
        env: Record<string, string>,
        request: Uint8Array
      ) =>
        Effect.gen(function* () {
          const refs = yield* Effect.promise(() => refsDigest(dirOf(repoId)))
          const digest = fetchCache.requestDigest(`${yield* gitVersion}\0${args.join("\0")}`, request)
          const key = refs === undefined ? undefined : `${repoId}\0${refs}\0${digest}`
          let bytes = key === undefined ? undefined : refLists.get(key)
          if (bytes === undefined) {
            const ran = yield* git(args, undefined, env, request)
            if (ran.code !== 0 || ran.stdout.length === 0) {
              return yield* refusedBy(ran.stderr)
            }
            bytes = new Uint8Array(ran.stdout)
            // Kept only when no push moved a ref while git read them.
            if (
              key !== undefined &&
              bytes.length <= refListKeptBytes &&
              (yield* Effect.promise(() => refsDigest(dirOf(repoId)))) === refs
            ) {
              if (refLists.size >= refListsKept) refLists.delete(refLists.keys().next().value!)
              refLists.set(key, bytes)
            }
          }
          return answered(bytes)
        })

      const run = (
        repoId: Kernel.RepoId,
        defaultBranch: string,
        request: Git.GitRun,
        input: Stream.Stream<Uint8Array, unknown>,
        onPush: (changes: ReadonlyArray<Git.RefChange>) => Effect.Effect<ReadonlyArray<string>>
      ) =>
        Effect.gen(function* () {
          yield* ensure(repoId, defaultBranch)
          if (
            request.mode === "advertise" &&
            request.service === "upload-pack" &&
            request.protocol !== null &&
            request.protocol.split(":").includes("version=2")
          ) {
            return yield* advertiseV2(repoId, request.protocol)
          }
          const modeArgs =
            request.mode === "advertise"
              ? ["--stateless-rpc", "--advertise-refs"]
              : request.mode === "stateless"
                ? ["--stateless-rpc"]
                : []
          const pushing = request.service === "receive-pack" && request.mode !== "advertise"
          // git writes straight into the client's connection only when it answers after reading all it is sent.
          const socket =
            request.mode === "stateless" &&
            request.service === "upload-pack" &&
            request.outputSocket instanceof Net.Socket
              ? request.outputSocket
              : undefined
          const env: Record<string, string> = {}
          if (request.protocol !== null) env.GIT_PROTOCOL = request.protocol
          if (pushing) env.HOSTPLANE_PUSH_CHANNEL = "1"
          const args = [
            ...transportConfig,
            "-c",
            `core.hooksPath=${hooks}`,
            request.service,
            ...modeArgs,
            dirOf(repoId)
          ]
          if (
            request.request !== undefined &&
            request.mode === "stateless" &&
            request.service === "upload-pack" &&
            (socket !== undefined || request.outputSocket === undefined)
          ) {
            const cached = yield* cachedFetch(repoId, args, env, request.request, socket, input)
            if (cached !== undefined) return cached
          }
          if (
            request.service === "upload-pack" &&
            request.mode === "stateless" &&
            request.request !== undefined &&
            pktLines(request.request)?.[0] === "command=ls-refs"
          ) {
            return yield* listRefs(repoId, args, env, request.request)
          }
          const child = yield* Effect.acquireRelease(spawnGit(args, env, pushing, socket), stop)
          const exited = yield* Deferred.make<number>()
          let stderr = ""
          child.once("close", (code) => {
            stderr = child.collected.toString()
            Deferred.doneUnsafe(exited, Effect.succeed(code ?? 128))
          })
          child.stdin!.on("error", () => {})
          // The client's bytes go in as they arrive, waiting for git to take each chunk (backpressure).
          const write = (chunk: Uint8Array) =>
            Effect.callback<void>((resume) => {
              if (child.stdin!.destroyed || child.stdin!.writableEnded) return resume(Effect.void)
              if (child.stdin!.write(chunk)) resume(Effect.void)
              else {
                const done = () => {
                  child.stdin!.off("drain", done)
                  child.stdin!.off("close", done)
                  resume(Effect.void)
                }
                child.stdin!.on("drain", done)
                child.stdin!.on("close", done)
              }
            })
          yield* Stream.runForEach(input, write).pipe(
            Effect.matchEffect({
              onSuccess: () => Effect.sync(() => child.stdin!.end()),
              onFailure: () => Effect.sync(() => child.kill("SIGKILL"))
            }),
            Effect.forkScoped
          )
          if (socket !== undefined) {
            return {
              output: Stream.drain(Stream.fromEffect(Deferred.await(exited))),
              wroteToSocket: true,
              exitCode: Deferred.await(exited),
              messages: Effect.sync(() => stderr)
            }
          }
          // Answer once git has written something or ended: a request it refused outright is the client's error.
          const stdout = child.stdout!
          const first = yield* Effect.raceFirst(
            Effect.callback<"output">((resume) => {
              // An empty 'readable' is the end of the output: then the exit code decides.
              const onReadable = () => {
                if (stdout.readableLength === 0) return
                // A 'readable' listener left behind would hold the stream in paused mode, stalling a pipe().
                stdout.off("readable", onReadable)
                resume(Effect.succeed("output"))
              }
              stdout.on("readable", onReadable)
              return Effect.sync(() => stdout.off("readable", onReadable))
            }),
            Effect.as(Deferred.await(exited), "ended" as const)
          )
          if (first === "ended" && stdout.readableLength === 0 && (yield* Deferred.await(exited)) !== 0) {
            return yield* refusedBy(stderr)
          }
          // The hook's report, answered while git waits for it (the pusher sees the answer); a push that changed no
          // ref runs no hook, and git's exit ends the wait.
          const reported = pushing
            ? yield* Effect.forkScoped(
                Effect.raceFirst(
                  Effect.flatMap(readHookReport(child), (changes) =>
                    Effect.flatMap(onPush(changes), (lines) =>
                      Effect.sync(() => {
                        const reply = child.stdio[4] as NodeJS.WritableStream
                        reply.on("error", () => {})
                        reply.end(lines.map((line) => `${line}\n`).join(""))
                        return changes
                      })
                    )
                  ),
                  Effect.as(Deferred.await(exited), [] as ReadonlyArray<Git.RefChange>)
                )
              )
            : undefined
          const finish = Effect.gen(function* () {
            yield* Deferred.await(exited)
            if (reported === undefined) return
            const changes = yield* Fiber.join(reported)
            if (changes.some((change) => change.new !== null)) yield* maintain(repoId)
          })
          const output = NodeStream.fromReadable<Uint8Array, Errors.GitUnreachable>({
            evaluate: () => child.stdout!,
            onError: unreachable
          }).pipe(Stream.concat(Stream.drain(Stream.fromEffect(finish))))
          return {
            output,
            ...(pushing ? {} : { nativeOutput: child.stdout! }),
            exitCode: Deferred.await(exited),
            messages: Effect.sync(() => stderr)
          }
        })

      const refs = (repoId: Kernel.RepoId, defaultBranch: string) =>
        Effect.gen(function* () {
          if (!(yield* exists(repoId))) {
            // Nothing to read yet, but a missing git binary is still reported (503 git_unavailable).
            yield* git(["--version"])
            return { head: defaultBranch, branches: [], tags: [] }
          }
          const dir = dirOf(repoId)
          const listed = yield* gitOk(
            ["for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)", "refs/heads", "refs/tags"],
            dir
          )
          const head = yield* git(["symbolic-ref", "-q", "HEAD"], dir)
          const branches: Array<{ name: string; commit: string }> = []
          const tags: Array<{ name: string; commit: string }> = []
          for (const line of listed.toString().split("\n")) {
            const [ref, oid, peeled] = line.split("\0")
            if (ref === undefined || oid === undefined) continue
            if (ref.startsWith("refs/heads/")) branches.push({ name: ref.slice(11), commit: oid })
            else if (ref.startsWith("refs/tags/")) tags.push({ name: ref.slice(10), commit: peeled || oid })
          }
          const headRef = head.stdout.toString().trim()
          return {
            head: headRef.startsWith("refs/heads/") ? headRef.slice(11) : defaultBranch,
            branches,
            tags
          }
        })

      const resolve = (repoId: Kernel.RepoId, ref: string) =>
        Effect.gen(function* () {
          if (!(yield* exists(repoId))) return Option.none<string>()
          const ran = yield* git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], dirOf(repoId))
          const sha = ran.stdout.toString().trim()
          return ran.code === 0 && sha !== "" ? Option.some(sha) : Option.none<string>()
        })

      const parseEntries = (out: Buffer): Array<Git.GitEntry & { readonly path: string }> =>
        out
          .toString()
          .split("\0")
          .filter((record) => record !== "")
          .map((record) => {
            const tab = record.indexOf("\t")
            const [mode, type, oid, size] = record.slice(0, tab).split(/ +/u)
            const name = record.slice(tab + 1)
            return {
              name: name.slice(name.lastIndexOf("/") + 1),
              path: name,
              type: type as Git.GitEntry["type"],
              mode: mode!,
              oid: oid!,
              size: size === "-" || size === undefined ? null : Number(size)
            }
          })

      const entry = (repoId: Kernel.RepoId, commit: string, segments: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const dir = dirOf(repoId)
          if (segments.length === 0) {
            const tree = (yield* gitOk(["rev-parse", `${commit}^{tree}`], dir)).toString().trim()
            return Option.some<Git.GitEntry>({ name: "", type: "tree", mode: "040000", oid: tree, size: null })
          }
          const path = segments.join("/")
          const ran = yield* git(["--literal-pathspecs", "ls-tree", "-z", "-l", "--full-tree", commit, "--", path], dir)
          if (ran.code !== 0) return Option.none<Git.GitEntry>()
          const found = parseEntries(ran.stdout).find((item) => item.path === path)
          return found === undefined ? Option.none<Git.GitEntry>() : Option.some<Git.GitEntry>(found)
        })

      const tree = (repoId: Kernel.RepoId, oid: string, limit: number) =>
        Effect.map(gitOk(["ls-tree", "-z", "-l", oid], dirOf(repoId)), (out) => {
          const entries = parseEntries(out)
          return {
            entries: entries.slice(0, limit).map(({ path: _path, ...item }) => item),
            truncated: entries.length > limit
          }
        })

      const blob = (repoId: Kernel.RepoId, oid: string, maxBytes: number) =>
        Effect.gen(function* () {
          const dir = dirOf(repoId)
          const size = Number((yield* gitOk(["cat-file", "-s", oid], dir)).toString().trim())
          if (size > maxBytes) return { size, content: null }
          return { size, content: new Uint8Array(yield* gitOk(["cat-file", "blob", oid], dir)) }
        })

      const log = (repoId: Kernel.RepoId, commit: string, limit: number) =>
        Effect.map(
          gitOk(
            ["log", "-z", `-n${limit}`, "--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%B", commit, "--"],
            dirOf(repoId)
          ),
          (out): ReadonlyArray<Git.Commit> => {
            const fields = out.toString().split("\0")
            const commits: Array<Git.Commit> = []
            for (let i = 0; i + 5 < fields.length; i += 6) {
              const [sha, parents, name, email, date, message] = fields.slice(i, i + 6) as [
                string,
                string,
                string,
                string,
                string,
                string
              ]
              commits.push({
                sha: sha.replace(/^\n/u, ""),
                message: message.replace(/\n+$/u, ""),
                author: { name, email, date: utcOrAsPrinted(date) },
                parents: parents === "" ? [] : parents.split(" ")
              })
            }
            return commits
          }
        )

      const setHead = (repoId: Kernel.RepoId, branch: string) =>
        Effect.gen(function* () {
          if (!(yield* exists(repoId))) return
          yield* gitOk(["symbolic-ref", "HEAD", `refs/heads/${branch}`], dirOf(repoId))
        })

      const remove = (repoId: Kernel.RepoId) =>
        Effect.gen(function* () {
          const running = repacking.get(repoId)?.fiber
          if (running !== undefined) yield* Fiber.interrupt(running)
          repacking.delete(repoId)
          for (const key of advertisements.keys()) if (key.startsWith(`${repoId}\0`)) advertisements.delete(key)
          for (const key of refLists.keys()) if (key.startsWith(`${repoId}\0`)) refLists.delete(key)
          yield* Effect.promise(() => fetchCache.forget(repoId))
          yield* prepared
          yield* Effect.tryPromise({
            try: () => Fs.rm(dirOf(repoId), { recursive: true, force: true }),
            catch: unreachable
          })
        })

      // `git archive` streams the tar as it builds it; an exit other than 0 (a path the commit lacks) fails the stream.
      const archive = (repoId: Kernel.RepoId, commit: string, paths: ReadonlyArray<string>) =>
        Stream.unwrap(
          Effect.map(
            Effect.acquireRelease(
              spawnGit(["--git-dir", dirOf(repoId), "archive", "--format=tar.gz", commit, "--", ...paths], {}),
              stop
            ),
            (child) => {
              let stderr = ""
              child.stdin!.end()
              const exited = new Promise<number>((resolve) =>
                child.once("close", (code) => {
                  stderr = child.collected.subarray(0, 4096).toString()
                  resolve(code ?? 128)
                })
              )
              return NodeStream.fromReadable<Uint8Array, Errors.GitUnreachable>({
                evaluate: () => child.stdout!,
                onError: unreachable
              }).pipe(
                Stream.concat(
                  Stream.drain(
                    Stream.fromEffect(
                      Effect.flatMap(
                        Effect.promise(() => exited),
                        (code) =>
                          code === 0
                            ? Effect.void
                            : Effect.fail(unreachable(new Error(stderr.trim() || `git archive exited ${code}`)))
                      )
                    )
                  )
                )
              )
            }
          )
        )

      return Git.GitStorage.of({ run, archive, refs, resolve, entry, tree, blob, log, setHead, remove })
    })
  )

/**
 * Repositories under `SERVICE_GIT_DIR`, else `<SERVICE_DATA_DIR or .hostplane>/git`: replicas share one folder on
 * shared storage (decisions.md part 15) while each keeps its own data directory.
 */
export const layerConfig = Layer.unwrap(
  Effect.gen(function* () {
    const shared = yield* Config.option(Config.String("SERVICE_GIT_DIR"))
    const root =
      shared._tag === "Some" && shared.value.trim() !== "" ? Path.resolve(shared.value.trim()) : yield* inDataDir("git")
    return layer(root)
  })
)
