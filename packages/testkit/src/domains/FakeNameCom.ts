import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { isRefusal, RegistrarAccount } from "./RegistrarAccount.ts"

/** One request the fake received: method, path with query, the parsed JSON body, whether the Basic auth was right. */
export interface FakeNameComRequest {
  readonly method: string
  readonly path: string
  readonly body: unknown
  readonly authorized: boolean
}

/**
 * What the fake does to the next matching request: answer with a status and body instead, `drop` the connection
 * (before doing anything, or after the account carried the request out: the answer lost), or carry it out and
 * `stall`, never answering (a registrar that hangs after buying).
 */
export type FakeNameComFault =
  | { readonly status: number; readonly body?: unknown }
  | { readonly drop: "before" | "after" }
  | { readonly stall: true }

export interface FakeNameCom {
  /** The API origin to configure as `SERVICE_REGISTRAR_URL`; the client adds `/v4/...`. */
  readonly url: string
  readonly username: string
  readonly token: string
  readonly account: RegistrarAccount
  readonly requests: Array<FakeNameComRequest>
  /** The next request whose `METHOD path` (path without query) matches `pattern` gets `fault` instead. */
  readonly failNext: (pattern: RegExp, fault: FakeNameComFault) => void
  readonly close: () => Promise<void>
}

const readBody = async (request: IncomingMessage): Promise<unknown> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString("utf8")
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return Symbol.for("unparsable")
  }
}

const send = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify(body))
}

/**
 * A loopback fake of the Name.com API v4 subset of decisions.md part 7: HTTP Basic `username:token` (401 otherwise),
 * `POST /v4/domains:checkAvailability`, `POST /v4/domains`, `GET /v4/domains[?page&perPage]`,
 * `GET /v4/domains/{name}`, `POST /v4/domains/{name}:renew|lock|unlock|enableAutorenew|disableAutorenew|setNameservers`,
 * `GET /v4/domains/{name}:getAuthCode`, with errors as `{ message, details }`. The account behind it is `account`.
 */
export const startFakeNameCom = async (
  options: { readonly username?: string; readonly token?: string; readonly account?: RegistrarAccount } = {}
): Promise<FakeNameCom> => {
  const username = options.username ?? "hostplane-test"
  const token = options.token ?? "fake-namecom-token"
  const account = options.account ?? new RegistrarAccount()
  const requests: Array<FakeNameComRequest> = []
  const faults: Array<{ readonly pattern: RegExp; readonly fault: FakeNameComFault }> = []
  const expected = `Basic ${Buffer.from(`${username}:${token}`).toString("base64")}`

  const answer = (method: string, path: string, query: URLSearchParams, body: unknown): [number, unknown] => {
    const result = (value: unknown): [number, unknown] =>
      isRefusal(value)
        ? [value.status, { message: value.message, ...(value.details === undefined ? {} : { details: value.details }) }]
        : [200, value]
    if (body === Symbol.for("unparsable"))
      return [400, { message: "Invalid Argument", details: "the body is not JSON" }]
    if (method === "POST" && path === "/v4/domains:checkAvailability") return result(account.checkAvailability(body))
    if (method === "POST" && path === "/v4/domains") return result(account.create(body))
    if (method === "GET" && path === "/v4/domains") {
      const page = Number(query.get("page") ?? "1")
      const perPage = Number(query.get("perPage") ?? "1000")
      if (!Number.isInteger(page) || page < 1 || !Number.isInteger(perPage) || perPage < 1) {
        return [400, { message: "Invalid Argument", details: "page and perPage are positive integers" }]
      }
      return [200, account.list(page, perPage)]
    }
    const match = /^\/v4\/domains\/([^/:]+)(?::([A-Za-z]+))?$/.exec(path)
    if (match === null) return [404, { message: "Not Found" }]
    const name = decodeURIComponent(match[1]!)
    const verb = match[2]
    if (method === "GET" && verb === undefined) return result(account.get(name))
    if (method === "GET" && verb === "getAuthCode") return result(account.authCode(name))
    if (method === "POST" && verb === "renew") return result(account.renew(name, body))
    if (method === "POST" && verb !== undefined) return result(account.action(name, verb, body))
    return [405, { message: "Method Not Allowed" }]
  }

  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? "/", "http://fake")
      const method = request.method ?? "GET"
      const body = await readBody(request)
      const authorized = request.headers.authorization === expected
      requests.push({ method, path: `${url.pathname}${url.search}`, body, authorized })
      if (!authorized) return send(response, 401, { message: "Unauthenticated" })
      const index = faults.findIndex((entry) => entry.pattern.test(`${method} ${url.pathname}`))
      const fault = index < 0 ? undefined : faults.splice(index, 1)[0]!.fault
      if (fault !== undefined && "drop" in fault && fault.drop === "before") return request.socket.destroy()
      if (fault !== undefined && "status" in fault) return send(response, fault.status, fault.body ?? {})
      const [status, payload] = answer(method, url.pathname, url.searchParams, body)
      if (fault !== undefined && "stall" in fault) return
      if (fault !== undefined) return request.socket.destroy()
      send(response, status, payload)
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    username,
    token,
    account,
    requests,
    failNext: (pattern, fault) => void faults.push({ pattern, fault }),
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}
