import type { Ports } from "@hostplane/http"
import { makeNodeListener } from "@hostplane/http"
import type { Layer } from "effect"
import * as Http from "node:http"

/**
 * A host application that already has its own Node server and mounts hostplane's `/v1` API beside its routes.
 * Everything else stays the host's.
 */
export const startHost = async (ports: Layer.Layer<Ports, unknown>, port = 0) => {
  const hostplane = await makeNodeListener(ports)
  const server = Http.createServer((request, response) => {
    if (request.url === "/v1" || request.url?.startsWith("/v1/")) return hostplane.listener(request, response)
    response.writeHead(200, { "content-type": "text/plain" }).end("the host's own page\n")
  })
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    server,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await hostplane.dispose()
    }
  }
}
