import { httpRequest } from "./HttpRequest.ts"

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

/** Sends raw bytes as an `application/json` body, with their length, on a connection of its own. */
export const sendRaw = async (url: string, method: string, token: string, body: Uint8Array) => {
  const { status, text } = await httpRequest(url, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body,
    agent: false
  })
  return { status, code: (text === "" ? {} : JSON.parse(text)).code as string | undefined }
}
