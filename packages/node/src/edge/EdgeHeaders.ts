import type * as Edge from "./Edge.ts"

/** Every edge response: no content sniffing, and no full URL (it may hold a code or a path) sent to other sites. */
export const everyResponse = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "strict-origin-when-cross-origin"
} as const

/** A file behind an access policy must not land in a shared cache, nor be reused for a visitor without the cookie. */
export const cachingOf = (isPrivate: boolean): Record<string, string> =>
  isPrivate
    ? { "cache-control": "private, max-age=0, must-revalidate", vary: "Cookie" }
    : { "cache-control": "public, max-age=0, must-revalidate" }

type FileAnswer = Extract<Edge.EdgeAnswer, { readonly _tag: "File" }>
type NotModifiedAnswer = Extract<Edge.EdgeAnswer, { readonly _tag: "NotModified" }>

/**
 * The headers of a bundle file's answer, whoever writes it (the edge app through Effect's HTTP server, or the lane on
 * node's own response): its type and length, its ETag, its caching and the edge's own.
 */
export const fileHeaders = (answer: FileAnswer): Record<string, string> => ({
  "content-type": answer.contentType,
  "content-length": String(answer.file.bytes),
  etag: answer.etag,
  ...cachingOf(answer.private),
  ...everyResponse
})

/** The headers of a 304 for a file the client holds. */
export const notModifiedHeaders = (answer: NotModifiedAnswer): Record<string, string> => ({
  etag: answer.etag,
  ...cachingOf(answer.private),
  ...everyResponse
})
