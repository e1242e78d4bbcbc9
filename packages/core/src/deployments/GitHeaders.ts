import { Result } from "effect"
import { BadRequest } from "../errors/Errors.ts"
import type { GitInfo } from "./Deployment.ts"

/** The raw values of the optional `X-Service-Git-*` upload headers, as the client sent them. */
export interface GitHeaders {
  readonly commit?: string | undefined
  readonly message?: string | undefined
  readonly branch?: string | undefined
  readonly dirty?: string | undefined
}

export const gitHeaderNames = {
  commit: "X-Service-Git-Commit",
  message: "X-Service-Git-Message",
  branch: "X-Service-Git-Branch",
  dirty: "X-Service-Git-Dirty"
} as const

/** Spec 4.3 and part 8: 7 to 64 hex characters (stored lowercase). */
export const gitCommitPattern = /^[0-9a-fA-F]{7,64}$/

/** Spec part 8: the message is cut at this many characters (Unicode code points). */
export const gitMessageMaxLength = 200

/** A longer branch name is 400; git itself keeps each ref name component within 255 bytes. */
export const gitBranchMaxLength = 255

// C0 controls, DEL and C1 controls: nothing a one-line display needs.
const controls = /[\u0000-\u001f\u007f-\u009f]/u
const controlsGlobal = /[\u0000-\u001f\u007f-\u009f]/gu

const refuse = (header: keyof typeof gitHeaderNames, message: string) =>
  Result.fail(new BadRequest({ message, details: { header: gitHeaderNames[header] } }))

/** Percent-decoding of UTF-8 (`%C3%A9` is `é`); a broken escape or invalid UTF-8 is 400. */
const percentDecoded = (header: "message" | "branch", raw: string): Result.Result<string, BadRequest> => {
  try {
    return Result.succeed(decodeURIComponent(raw))
  } catch {
    return refuse(header, `${gitHeaderNames[header]} is not valid percent-encoded UTF-8`)
  }
}

/**
 * The display-only git facts of an upload (spec 4.3), never used for authorization or placement.
 *
 * - commit: 7 to 64 hex characters, else 400; stored lowercase.
 * - message: percent-decoded; only its first line is kept, with control characters removed, cut at 200 characters.
 * - branch: percent-decoded; control characters or more than 255 characters are 400 (git allows neither).
 * - dirty: exactly `true` or `false`, else 400.
 *
 * An empty message or branch counts as absent. With no header at all the answer is `null`; with some, the absent ones
 * are `null` fields.
 */
export const parseGitHeaders = (headers: GitHeaders): Result.Result<GitInfo | null, BadRequest> => {
  if (
    headers.commit === undefined &&
    headers.message === undefined &&
    headers.branch === undefined &&
    headers.dirty === undefined
  ) {
    return Result.succeed(null)
  }
  let commit: string | null = null
  if (headers.commit !== undefined) {
    if (!gitCommitPattern.test(headers.commit)) {
      return refuse("commit", `${gitHeaderNames.commit} must be 7 to 64 hexadecimal characters`)
    }
    commit = headers.commit.toLowerCase()
  }
  let message: string | null = null
  if (headers.message !== undefined) {
    const decoded = percentDecoded("message", headers.message)
    if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
    const firstLine = decoded.success.split(/\r\n|\r|\n/u, 1)[0] ?? ""
    const cut = Array.from(firstLine.replace(controlsGlobal, "")).slice(0, gitMessageMaxLength).join("")
    message = cut === "" ? null : cut
  }
  let branch: string | null = null
  if (headers.branch !== undefined) {
    const decoded = percentDecoded("branch", headers.branch)
    if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
    if (controls.test(decoded.success)) {
      return refuse("branch", `${gitHeaderNames.branch} must not contain control characters`)
    }
    if (Array.from(decoded.success).length > gitBranchMaxLength) {
      return refuse("branch", `${gitHeaderNames.branch} is longer than ${gitBranchMaxLength} characters`)
    }
    branch = decoded.success === "" ? null : decoded.success
  }
  let dirty: boolean | null = null
  if (headers.dirty !== undefined) {
    if (headers.dirty !== "true" && headers.dirty !== "false") {
      return refuse("dirty", `${gitHeaderNames.dirty} must be exactly true or false`)
    }
    dirty = headers.dirty === "true"
  }
  return Result.succeed({ commit, message, branch, dirty })
}
