import * as Http from "node:http"

const padBytes = 3 * 1024 * 1024
let pad: Buffer | undefined

/** `valid` with a 3 MiB string member: the pad is made once and copied in, not a 3 MiB string encoded per call. */
const oversized = (valid: string) =>
  Buffer.concat([
    Buffer.from(`${valid.slice(0, -1)}, "pad": "`),
    (pad ??= Buffer.alloc(padBytes, "x")),
    Buffer.from('"}')
  ])

/** Bodies no JSON route may take: each must be a 4xx with its code, never a 500, and nothing stored. */
export const hostileBodies = (valid: string): ReadonlyArray<readonly [string, Uint8Array, number, string]> => [
  ["malformed JSON", Buffer.from(valid.slice(0, -1)), 400, "bad_request"],
  [
    "not UTF-8",
    Buffer.concat([Buffer.from(valid.slice(0, -2)), Buffer.from([0xe9, 0xff]), Buffer.from(valid.slice(-2))]),
    400,
    "bad_request"
  ],
  ["a NUL", Buffer.from(valid.replace(/"([^"]*)"(\s*[,}\]])/, '"$1\\u0000"$2')), 400, "bad_request"],
  ["an unpaired surrogate", Buffer.from(valid.replace(/"([^"]*)"(\s*[,}\]])/, '"$1\\ud800"$2')), 400, "bad_request"],
  ["a JSON array", Buffer.from(`[${valid}]`), 400, "bad_request"],
  ["3 MiB", oversized(valid), 413, "payload_too_large"]
]

/**
 * Sends raw bytes as an `application/json` body, with their length, on a connection of its own. Through `node:http`
 * rather than fetch, which copies the bytes into a stream of its own first (about five times the CPU for 3 MiB).
 */
export const sendRaw = (url: string, method: string, token: string, body: Uint8Array) =>
  new Promise<{ status: number; code: string | undefined }>((resolve, reject) => {
    const request = Http.request(
      url,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "content-length": body.byteLength
        }
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("error", reject)
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          resolve({
            status: response.statusCode!,
            code: (text === "" ? {} : JSON.parse(text)).code as string | undefined
          })
        })
      }
    )
    request.on("error", reject)
    request.end(body)
  })
