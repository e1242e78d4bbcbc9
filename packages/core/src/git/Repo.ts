import { Schema } from "effect"
import { OrgId, ProjectId, RepoId, UserId } from "../kernel/Ids.ts"

/** Repo names (decisions.md part 1): 1..100 of `A-Za-z0-9._-`, not ending `.git`, not `.` or `..`. */
export const repoNamePattern = /^[A-Za-z0-9._-]{1,100}$/u

export const isRepoName = (name: string): boolean =>
  repoNamePattern.test(name) && name !== "." && name !== ".." && !name.toLowerCase().endsWith(".git")

export const RepoName = Schema.String.check(
  Schema.makeFilter((name: string) =>
    isRepoName(name) ? true : "1 to 100 of A-Z a-z 0-9 . _ -, not ending .git, not . or .."
  )
)

/**
 * A valid branch name, by git's `check-ref-format --branch` rules: no control characters, space, `~^:?*[\`, `..`,
 * `@{` or `//`; no component starting with `.` or ending `.lock`; not starting `-` or `/`, not ending `/` or `.`.
 */
export const isBranchName = (name: string): boolean => {
  if (name.length === 0 || name.length > 255 || name === "@" || name === "HEAD") return false
  if (/[\x00-\x20\x7f~^:?*[\\]/u.test(name)) return false
  if (name.includes("..") || name.includes("@{") || name.includes("//")) return false
  if (name.startsWith("-") || name.startsWith("/") || name.endsWith("/") || name.endsWith(".")) return false
  return name.split("/").every((part) => !part.startsWith(".") && !part.endsWith(".lock"))
}

export const BranchName = Schema.String.check(
  Schema.makeFilter((name: string) => (isBranchName(name) ? true : "a valid git branch name"))
)

export const Visibility = Schema.Literals(["private", "public"])
export type Visibility = typeof Visibility.Type

/** The stored repo; the bare repository on disk is named by `id`, so a rename never moves it. */
export interface RepoRow {
  readonly id: RepoId
  readonly orgId: OrgId
  readonly projectId: ProjectId
  readonly name: string
  readonly visibility: Visibility
  readonly defaultBranch: string
  /** A push that moves the default branch deploys its tree (decisions.md part 17). */
  readonly deployOnPush: boolean
  readonly createdAt: string
  readonly deletedAt: string | null
}

export const Repo = Schema.Struct({
  name: Schema.String,
  visibility: Visibility,
  defaultBranch: Schema.String,
  deployOnPush: Schema.Boolean,
  createdAt: Schema.String,
  cloneUrl: Schema.String,
  sshUrl: Schema.String
})
export type Repo = typeof Repo.Type

export const RepoList = Schema.Struct({ items: Schema.Array(Repo) })

export const CreateRepoInput = Schema.Struct({
  name: RepoName,
  visibility: Schema.optionalKey(Visibility),
  defaultBranch: Schema.optionalKey(BranchName)
})
export type CreateRepoInput = typeof CreateRepoInput.Type

export const PatchRepoInput = Schema.Struct({
  name: Schema.optionalKey(RepoName),
  visibility: Schema.optionalKey(Visibility),
  defaultBranch: Schema.optionalKey(BranchName),
  deployOnPush: Schema.optionalKey(Schema.Boolean)
})
export type PatchRepoInput = typeof PatchRepoInput.Type

export const RefEntry = Schema.Struct({ name: Schema.String, commit: Schema.String })

/** RepoRefs: short names; an annotated tag's `commit` is the tagged commit. */
export const RepoRefs = Schema.Struct({
  head: Schema.NullOr(Schema.String),
  branches: Schema.Array(RefEntry),
  tags: Schema.Array(RefEntry)
})
export type RepoRefs = typeof RepoRefs.Type

export const TreeEntry = Schema.Struct({
  name: Schema.String,
  path: Schema.String,
  type: Schema.Literals(["blob", "tree", "commit"]),
  mode: Schema.String,
  size: Schema.NullOr(Schema.Number)
})
export type TreeEntry = typeof TreeEntry.Type

export const RepoTree = Schema.Struct({
  ref: Schema.String,
  commit: Schema.String,
  path: Schema.String,
  entries: Schema.Array(TreeEntry),
  truncated: Schema.Boolean
})
export type RepoTree = typeof RepoTree.Type

export const RepoBlob = Schema.Struct({
  ref: Schema.String,
  path: Schema.String,
  size: Schema.Number,
  binary: Schema.Boolean,
  tooLarge: Schema.Boolean,
  content: Schema.NullOr(Schema.String)
})
export type RepoBlob = typeof RepoBlob.Type

export const Commit = Schema.Struct({
  sha: Schema.String,
  message: Schema.String,
  author: Schema.Struct({ name: Schema.String, email: Schema.String, date: Schema.String }),
  parents: Schema.Array(Schema.String)
})
export type Commit = typeof Commit.Type

export const CommitList = Schema.Struct({ items: Schema.Array(Commit) })

/** One ref change of a push: `old` null on a creation, `new` null on a deletion. */
export const RefUpdate = Schema.Struct({
  ref: Schema.String,
  old: Schema.NullOr(Schema.String),
  new: Schema.NullOr(Schema.String),
  userId: UserId,
  at: Schema.String
})
export type RefUpdate = typeof RefUpdate.Type

export const RefUpdateList = Schema.Struct({ items: Schema.Array(RefUpdate) })

/** A ref change as the storage saw it, before it is recorded with its pusher and time. */
export interface RefChange {
  readonly ref: string
  readonly old: string | null
  readonly new: string | null
}

/** Limits of spec part 8. */
export const maxTreeEntries = 1000
export const maxBlobBytes = 1024 * 1024
export const maxCommits = 200
export const maxRefUpdates = 200
/** git's binary rule: a NUL byte in the first 8,000 bytes. */
export const binarySniffBytes = 8000

/**
 * A browse path from the root as its segments, or undefined when it escapes the tree (`..`, `.`, empty segments,
 * a backslash): such a path is 404. Leading and trailing slashes are ignored; empty means the root.
 */
export const pathSegments = (path: string): ReadonlyArray<string> | undefined => {
  const trimmed = path.replace(/^\/+|\/+$/gu, "")
  if (trimmed === "") return []
  const segments = trimmed.split("/")
  return segments.every((s) => s !== "" && s !== "." && s !== ".." && !s.includes("\\")) ? segments : undefined
}

/** A ref the browse API accepts (a branch, tag or commit id); anything else cannot name a ref (404 `no_ref`). */
export const isBrowseRef = (ref: string): boolean => isBranchName(ref) || /^[0-9a-f]{7,64}$/u.test(ref)
