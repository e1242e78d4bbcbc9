import { Effect, Option, Result } from "effect"
import { HttpMethod, type HttpServerError, type HttpServerRequest } from "effect/http"

/** One rejected piece of a request, in the shape of `details.issues`. */
export interface InputIssue {
  readonly path: ReadonlyArray<string>
  readonly message: string
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true })
const lenientUtf8 = new TextDecoder("utf-8")

/**
 * Why a text cannot be taken as input: a NUL (PostgreSQL `text` cannot hold it, and no name or display text needs
 * it) or an unpaired surrogate (not Unicode: UTF-8 cannot encode it, and `encodeURIComponent` throws on it).
 */
export const textProblem = (text: string): string | undefined =>
  text.includes("\u0000")
    ? "must not contain a NUL character"
    : text.isWellFormed()
      ? undefined
      : "must not contain an unpaired surrogate"

/** Percent-decodes one URL component strictly: malformed escapes and escapes that are not UTF-8 are refused. */
const decodeComponent = (component: string): string | undefined =>
  Result.getOrUndefined(Result.try(() => decodeURIComponent(component)))

const componentIssue = (where: ReadonlyArray<string>, raw: string): InputIssue | undefined => {
  const decoded = decodeComponent(raw)
  if (decoded === undefined) return { path: where, message: "must be valid percent-encoded UTF-8" }
  const problem = textProblem(decoded)
  return problem === undefined ? undefined : { path: where, message: problem }
}

/** Printable ASCII other than `%`: such a URL decodes to itself, so it holds no NUL and no unpaired surrogate. */
const plainUrl = /^[\x21-\x24\x26-\x7e]*$/

const none: ReadonlyArray<InputIssue> = []

/** Every path segment and query value, as the router and the query decoder will read them. */
export const urlIssues = (url: string): ReadonlyArray<InputIssue> => {
  if (plainUrl.test(url)) return none
  const queryAt = url.indexOf("?")
  const path = queryAt === -1 ? url : url.slice(0, queryAt)
  const query = queryAt === -1 ? "" : url.slice(queryAt + 1).split("#")[0]!
  const issues: Array<InputIssue> = []
  for (const segment of path.split("/")) {
    const issue = componentIssue(["path"], segment)
    if (issue !== undefined) issues.push(issue)
  }
  for (const pair of query.split("&")) {
    if (pair === "") continue
    const equals = pair.indexOf("=")
    const key = (equals === -1 ? pair : pair.slice(0, equals)).replace(/\+/g, " ")
    const value = (equals === -1 ? "" : pair.slice(equals + 1)).replace(/\+/g, " ")
    const name = decodeComponent(key) ?? key
    for (const issue of [componentIssue(["query", name], key), componentIssue(["query", name], value)]) {
      if (issue !== undefined) issues.push(issue)
    }
  }
  return issues
}

interface Place {
  readonly key: string
  readonly parent: Place | undefined
}

const pathOf = (place: Place | undefined): Array<string> => {
  const path: Array<string> = []
  for (let at = place; at !== undefined; at = at.parent) path.unshift(at.key.toWellFormed())
  return path
}

/**
 * Every string of a parsed JSON value, keys included, walked without recursion and without copying paths (a body
 * may nest a hundred thousand levels deep); a path is built only for a string that fails.
 */
const jsonIssues = (root: unknown): ReadonlyArray<InputIssue> => {
  const issues: Array<InputIssue> = []
  const pending: Array<readonly [unknown, Place | undefined]> = [[root, undefined]]
  while (pending.length > 0 && issues.length < 20) {
    const [value, place] = pending.pop()!
    if (typeof value === "string") {
      const problem = textProblem(value)
      if (problem !== undefined) issues.push({ path: pathOf(place), message: problem })
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => pending.push([item, { key: String(i), parent: place }]))
    } else if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        const at = { key, parent: place }
        const problem = textProblem(key)
        if (problem !== undefined) issues.push({ path: pathOf(at), message: `a key ${problem}` })
        pending.push([item, at])
      }
    }
  }
  return issues
}

/** Whether the API will decode the body as JSON: it does so for a body without Content-Type too. */
const isJson = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) => {
  const contentType = request.headers["content-type"]
  // A large body without a type is no JSON the API would take: its own 413 or 415 answers it unread.
  if (contentType === undefined) return !(Number(request.headers["content-length"] ?? "0") > maxBytes)
  const media = contentType.split(";")[0]!.trim().toLowerCase()
  return media === "application/json" || media.endsWith("+json")
}

/**
 * Text the API would otherwise store or route on as something else than it was sent: a JSON body that is not UTF-8
 * (decoding it would put replacement characters in its place), and a NUL or unpaired surrogate in any JSON string.
 * Malformed JSON is left to the API's own 400. Reads the body (under the request's `MaxBodySize`); the API's decoder
 * reuses the bytes read here. The URL is checked apart, by `urlIssues`.
 */
export const bodyIssues = (
  request: HttpServerRequest.HttpServerRequest,
  options: { readonly readBody: boolean; readonly maxBodyBytes: number }
): Effect.Effect<Option.Option<ReadonlyArray<InputIssue>>, HttpServerError.HttpServerError> =>
  !options.readBody || !HttpMethod.hasBody(request.method) || !isJson(request, options.maxBodyBytes)
    ? Effect.succeedNone
    : Effect.map(request.arrayBuffer, (bytes) => {
        if (bytes.byteLength === 0) return Option.none()
        // Not JSON (malformed, or a bundle sent with the wrong type): the route's own 400 or 415 answers it.
        const isJsonText = (text: string) => Result.try((): unknown => JSON.parse(text))
        const strict = Result.try(() => strictUtf8.decode(bytes))
        if (Result.isFailure(strict)) {
          return Result.isFailure(isJsonText(lenientUtf8.decode(bytes)))
            ? Option.none()
            : Option.some([{ path: ["body"], message: "must be UTF-8" }])
        }
        // Well-formed UTF-8 holds no unpaired surrogate, and a raw NUL is no JSON: only a `\u` escape can carry
        // either, so the common body is not parsed twice (the API parses it again).
        if (!strict.success.includes("\\u")) return Option.none()
        const parsed = isJsonText(strict.success)
        if (Result.isFailure(parsed)) return Option.none()
        const inBody = jsonIssues(parsed.success)
        return inBody.length > 0 ? Option.some(inBody) : Option.none()
      })
