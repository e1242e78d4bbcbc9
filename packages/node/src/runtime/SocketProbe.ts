import * as Http from "node:http"

/**
 * Whether a workerd answers on its unix socket: a GET of `path` (with `headers`) answered `status` within
 * `timeoutMs`. A loader shard answers its health path, a hot worker a check its entry module answers itself.
 */
export const probeSocket = (
  socket: string,
  request: { readonly path: string; readonly headers?: Http.OutgoingHttpHeaders; readonly status: number },
  timeoutMs: number
) =>
  new Promise<boolean>((resolve) => {
    const sent = Http.request(
      { socketPath: socket, path: request.path, method: "GET", headers: request.headers, timeout: timeoutMs },
      (response) => {
        response.resume()
        resolve(response.statusCode === request.status)
      }
    )
    sent.on("timeout", () => {
      sent.destroy()
      resolve(false)
    })
    sent.on("error", () => resolve(false))
    sent.end()
  })
