import { Deployments } from "@hostplane/core"
import { Effect, Option } from "effect"
import { execFile } from "node:child_process"

const git = (dir: string, args: ReadonlyArray<string>): Effect.Effect<Option.Option<string>> =>
  Effect.callback<Option.Option<string>>((resume) => {
    execFile("git", ["-C", dir, ...args], { timeout: 10_000, maxBuffer: 1024 * 1024 }, (error, stdout) =>
      resume(Effect.succeed(error === null ? Option.some(stdout) : Option.none()))
    )
  })

/** The first line of a commit message, cut at the spec's 200 characters (code points, as the server counts). */
const firstLine = (message: string) =>
  [...(message.split(/\r?\n/)[0] ?? "")].slice(0, Deployments.gitMessageMaxLength).join("")

/**
 * The display-only `X-Service-Git-*` headers of spec 4.3 from the folder's git state: HEAD's commit, its subject, the
 * branch (none when detached) and whether the folder has uncommitted changes. Nothing when the folder is not in a git
 * work tree or git is not installed.
 */
export const gitHeaders = (dir: string): Effect.Effect<Record<string, string>> =>
  Effect.gen(function* () {
    const commit = Option.map(yield* git(dir, ["rev-parse", "HEAD"]), (out) => out.trim())
    if (Option.isNone(commit) || !Deployments.gitCommitPattern.test(commit.value)) return {}
    const headers: Record<string, string> = { "x-service-git-commit": commit.value }
    const message = yield* git(dir, ["log", "-1", "--format=%B", "HEAD"])
    if (Option.isSome(message)) headers["x-service-git-message"] = encodeURIComponent(firstLine(message.value))
    const branch = Option.map(yield* git(dir, ["symbolic-ref", "--short", "-q", "HEAD"]), (out) => out.trim())
    if (Option.isSome(branch) && branch.value !== "" && branch.value.length <= Deployments.gitBranchMaxLength) {
      headers["x-service-git-branch"] = encodeURIComponent(branch.value)
    }
    const status = yield* git(dir, ["status", "--porcelain", "--", "."])
    if (Option.isSome(status)) headers["x-service-git-dirty"] = status.value.trim() === "" ? "false" : "true"
    return headers
  })
