import * as Http from "node:http"

export interface HttpRequestOptions {
  readonly method: string
  readonly headers: Record<string, string>
  /** Sent with its `content-length`. */
  readonly body?: string | Uint8Array | undefined
  /** `false`: a connection of its own, closed after the answer. */
  readonly agent: Http.Agent | false
}

/** An answer as fetch with `redirect: "manual"` would give it: status, headers, the whole body. */
export interface HttpAnswer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/**
 * One request through node:http. Not fetch: its request and response streams cost the worker about 0.5 ms of CPU more
 * per call (and copy a byte body into a stream of their own first), and suites make thousands of calls in the process
 * that also runs the server. A request on a kept-alive socket the server closed as it went out (node's documented case
 * for `reusedSocket`) was never read by the server, so it is sent once more on a new connection.
 */
export const httpRequest = (url: string, options: HttpRequestOptions, retried = false): Promise<HttpAnswer> =>
  new Promise((resolve, reject) => {
    let answered = false
    const outgoing = Http.request(
      url,
      {
        method: options.method,
        agent: options.agent,
        headers:
          options.body === undefined
            ? options.headers
            : { ...options.headers, "content-length": String(Buffer.byteLength(options.body)) }
      },
      (response) => {
        answered = true
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("error", reject)
        response.on("end", () => {
          const headers = new Headers()
          for (let i = 0; i < response.rawHeaders.length; i += 2) {
            headers.append(response.rawHeaders[i]!, response.rawHeaders[i + 1]!)
          }
          resolve({ status: response.statusCode!, headers, text: Buffer.concat(chunks).toString("utf8") })
        })
      }
    )
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      if (outgoing.reusedSocket && !answered && !retried && (error.code === "ECONNRESET" || error.code === "EPIPE")) {
        httpRequest(url, options, true).then(resolve, reject)
      } else reject(error)
    })
    outgoing.end(options.body)
  })
