import { Context, Effect, Layer, type Option, Schema, type Scope, Stream } from "effect"
import { GitUnavailable, type GitUnreachable } from "../errors/Errors.ts"
import type { RepoId } from "../kernel/Ids.ts"
import type { Commit, RefChange, RepoRefs } from "./Repo.ts"

export type GitService = "upload-pack" | "receive-pack"

/** One run of a git transport service. */
export interface GitRun {
  readonly service: GitService
  /** `advertise`: smart HTTP's ref advertisement; `stateless`: one smart HTTP request; `session`: one SSH session. */
  readonly mode: "advertise" | "stateless" | "session"
  /** The client's protocol request (`version=2`), passed to git as `GIT_PROTOCOL`. */
  readonly protocol: string | null
  /**
   * A connection git writes its whole output into itself, as its standard output (for the disk storage a plain Node
   * `net.Socket` whose response head the edge has prepared): no byte of the output then passes through the server,
   * which on a busy machine is one process fewer to wait for per pipe's worth of pack. Only for a run that records
   * nothing after git's output and that git answers only after reading its whole input (an upload-pack `stateless`
   * run): the input stream's first step may write the response head, since git writes nothing before it has read.
   * A storage that cannot honour it leaves `wroteToSocket` unset and streams the output as usual.
   */
  readonly outputSocket?: unknown
  /**
   * The whole request (what the input stream carries after its first step), when the edge read it before starting
   * git: a protocol v2 request of known length. A storage may answer it as git answered the same request on the same
   * refs before, without running git.
   */
  readonly request?: Uint8Array
}

/** A running git service: its output streams as git writes it; `exitCode` waits for the end. */
export interface GitProcess {
  readonly output: Stream.Stream<Uint8Array, GitUnreachable>
  /**
   * The same bytes as `output` as the platform's own stream (a Node `Readable` from the disk storage), present only
   * when nothing is recorded after git's output ends (not a push). An edge can hand it to its socket with the
   * platform's own backpressure, no chunk passing through an Effect stream; the caller still closes the run's scope
   * once it is done with it (that stops git if it is still running). Read either this or `output`, never both.
   */
  readonly nativeOutput?: unknown
  /** git wrote its output into `GitRun.outputSocket` itself: `output` is then empty and ends when git has exited. */
  readonly wroteToSocket?: boolean
  readonly exitCode: Effect.Effect<number>
  /** What git wrote to stderr (at most 64 KiB), complete once it has exited. */
  readonly messages: Effect.Effect<string>
}

/** git refused the request before answering anything (a malformed pkt-line): the client's fault, 400. */
export class GitRefused extends Schema.TaggedError<GitRefused>()("GitRefused", { message: Schema.String }) {}

export type StorageError = GitUnavailable | GitUnreachable

/** An entry of a tree, as git stores it. */
export interface GitEntry {
  readonly name: string
  readonly type: "blob" | "tree" | "commit"
  readonly mode: string
  readonly oid: string
  /** Null for trees and submodules. */
  readonly size: number | null
}

/**
 * Bare repositories by repo id, driven through the real `git`: created on first use, so a record costs nothing until
 * someone pushes. Ref changes of a push are what git itself reports after updating the refs, and no object a ref
 * ever named is pruned. Bodies stream both ways; nothing is buffered whole.
 */
export class GitStorage extends Context.Service<
  GitStorage,
  {
    /**
     * Starts a transport service on the repository (created with `defaultBranch` as HEAD when missing) and answers
     * once git has begun to answer; `onPush` receives the ref changes of a push once git has made them, while the
     * pusher still waits, and the lines it answers reach the pusher as git's own `remote:` lines.
     */
    readonly run: (
      repoId: RepoId,
      defaultBranch: string,
      run: GitRun,
      input: Stream.Stream<Uint8Array, unknown>,
      onPush: (changes: ReadonlyArray<RefChange>) => Effect.Effect<ReadonlyArray<string>>
    ) => Effect.Effect<GitProcess, StorageError | GitRefused, Scope.Scope>
    /**
     * A gzipped tar of the commit's `paths` (each a file or folder at the root of its tree, present in it), as
     * `git archive` writes it: what an upload of those files would send.
     */
    readonly archive: (
      repoId: RepoId,
      commit: string,
      paths: ReadonlyArray<string>
    ) => Stream.Stream<Uint8Array, StorageError>
    /** Branches and tags; empty lists for a repository never pushed to. */
    readonly refs: (repoId: RepoId, defaultBranch: string) => Effect.Effect<RepoRefs, StorageError>
    /** The commit a branch, tag or commit id names. */
    readonly resolve: (repoId: RepoId, ref: string) => Effect.Effect<Option.Option<string>, StorageError>
    /** The entry at `segments` from the commit's root (the root tree itself for none). */
    readonly entry: (
      repoId: RepoId,
      commit: string,
      segments: ReadonlyArray<string>
    ) => Effect.Effect<Option.Option<GitEntry>, StorageError>
    /** At most `limit` entries of a tree, and whether there were more. */
    readonly tree: (
      repoId: RepoId,
      tree: string,
      limit: number
    ) => Effect.Effect<{ readonly entries: ReadonlyArray<GitEntry>; readonly truncated: boolean }, StorageError>
    /** A blob's size, and its bytes only when at most `maxBytes`. */
    readonly blob: (
      repoId: RepoId,
      oid: string,
      maxBytes: number
    ) => Effect.Effect<{ readonly size: number; readonly content: Uint8Array | null }, StorageError>
    /** Up to `limit` commits from `commit`, newest first. */
    readonly log: (repoId: RepoId, commit: string, limit: number) => Effect.Effect<ReadonlyArray<Commit>, StorageError>
    /** Points HEAD at `branch` (it need not exist yet); nothing for a repository not created yet. */
    readonly setHead: (repoId: RepoId, branch: string) => Effect.Effect<void, StorageError>
    /** Removes the repository from disk; nothing when it is already gone. */
    readonly remove: (repoId: RepoId) => Effect.Effect<void, StorageError>
  }
>()("@hostplane/core/git/GitStorage") {
  /** No git storage: every repository operation answers 503 `git_unavailable`. */
  static readonly off: Layer.Layer<GitStorage> = Layer.sync(GitStorage, () => noGitStorage)
}

const noGit = () => Effect.fail(new GitUnavailable({ message: "this deployment has no git storage" }))

/** What a host without git storage has: every repository operation answers 503 `git_unavailable`. */
const noGitStorage: GitStorage["Service"] = {
  run: noGit,
  archive: () => Stream.fail(new GitUnavailable({ message: "this deployment has no git storage" })),
  refs: noGit,
  resolve: noGit,
  entry: noGit,
  tree: noGit,
  blob: noGit,
  log: noGit,
  setHead: noGit,
  remove: noGit
}
