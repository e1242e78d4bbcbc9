import type { services } from "@hostplane/core"
import type { Context, Layer } from "effect"
import type { HttpRouter } from "effect/http"
import type * as Http from "node:http"
import { app, type Ports } from "../App.ts"
import { mount } from "./Mount.ts"

/** What the served layer gives the host besides the routes: every core service and the registry. */
type Services = Layer.Success<typeof services>

export interface NodeListener<R> {
  /** A `node:http` request listener answering every `/v1` route. */
  readonly listener: (request: Http.IncomingMessage, response: Http.ServerResponse) => void
  /** The services the host provided, for hosts (and tests) that also call them directly. */
  readonly context: Context.Context<R>
  /** Releases everything the listener built (database pools, background runners). */
  readonly dispose: () => Promise<void>
}

/**
 * Builds hostplane as a request listener to mount inside a host's own Node server. `ports` provides the stores,
 * `Settings`, optional adapters and any background runners that should live as long as the listener. It is `mount`
 * at the root, without the in-process clients.
 */
export const makeNodeListener = async <E>(
  ports: Layer.Layer<Ports, E>,
  /** The routes and services to serve: `app`, or `appWith(...)` for a host's (or a test's) extra areas. */
  served: Layer.Layer<Services, unknown, Ports | HttpRouter.HttpRouter> = app
): Promise<NodeListener<Ports | Services>> => {
  const { listener, context, dispose } = await mount(ports, { served })
  return { listener, context, dispose }
}
