import { Git, Identity, Kernel } from "@hostplane/core"
import { Effect } from "effect"

/** Where the standalone server listens and keeps its data, as the start-up log reports it. */
export interface StartupInfo {
  readonly listen: { readonly host: string; readonly port: number }
  readonly edgeListen: { readonly host: string; readonly port: number }
  /** The embedded PostgreSQL's folder (absolute), or undefined when `DATABASE_URL` is used. */
  readonly embeddedPostgres: string | undefined
}

/** A URL a local client can open for a listen address: a wildcard host is reached on loopback. */
export const localUrl = ({ host, port }: StartupInfo["listen"]): string => {
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`
}

/**
 * Logs, once the sockets are bound, what an operator needs to start: the API, its docs, the edge (and the host name
 * a project is served under there), the public URL links point at, and where the database lives.
 */
export const logStartup = Effect.fn("Server.logStartup")(function* (info: StartupInfo) {
  const settings = yield* Kernel.Settings
  const { devAuth } = yield* Identity.IdentityConfig
  const { sshListen } = yield* Git.GitConfig
  const api = `${localUrl(info.listen)}/v1`
  const edge = localUrl(info.edgeListen)
  yield* Effect.logInfo(`hostplane is up: API ${api} (docs ${api}/docs)`, {
    api,
    docs: `${api}/docs`,
    openapi: `${api}/openapi.json`,
    edge,
    projectUrls: `http://<project>.${settings.appDomain}:${info.edgeListen.port}/`,
    publicUrl: settings.publicUrl,
    git: `${settings.publicUrl}/git/<org>/<project>/<repo>.git`,
    gitSsh: sshListen === null ? "off" : `${sshListen.host}:${sshListen.port}`,
    database: info.embeddedPostgres === undefined ? "DATABASE_URL" : `embedded PostgreSQL in ${info.embeddedPostgres}`,
    devLogin: devAuth
  })
  if (devAuth) {
    yield* Effect.logWarning("dev login is ON (POST /v1/auth/dev/login): never expose this server publicly")
  }
})
