import { Identity } from "@hostplane/core"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HostAuthenticator } from "../auth/HostAuthenticator.ts"

/** One built file of the web console, served under `/console/<path>`. */
export interface ConsoleFile {
  readonly body: Uint8Array
  readonly contentType: string
}

/** The built web console (`@hostplane/console`'s `loadConsole()`): its index page and its hashed files. */
export interface ConsoleFiles {
  readonly index: string
  readonly files: ReadonlyMap<string, ConsoleFile>
}

/**
 * The web console this listener serves at `/` (decisions.md part 14), or none: a host that embeds the API without
 * the console serves only `/v1` and the invitation page.
 */
export const Console = Context.Reference<ConsoleFiles | undefined>("@hostplane/http/console/Console", {
  defaultValue: () => undefined
})

/**
 * The path prefix a host mounts hostplane under (`/platform`; `""` at the root): the console's index names its files
 * and the console builds its links and API calls under it. `mount` provides it.
 */
export const MountPrefix = Context.Reference<string>("@hostplane/http/console/MountPrefix", {
  defaultValue: () => ""
})

/** The console's URLs (decisions.md part 14): each answers the index page, so a reload lands on the same page. */
export const consolePaths = ["/", "/orgs/*", "/account", "/invites/:token"] as const
// (`/orgs/*` also answers `/orgs` itself: the router registers both.)

/**
 * `script-src 'self'` (no inline script, no eval), `connect-src 'self'`, `frame-ancestors 'none'`: the console loads
 * nothing from another origin and no page may frame it.
 */
export const consoleSecurityHeaders = {
  "content-security-policy": [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'"
  ].join("; "),
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY"
} as const

const escapeAttribute = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/**
 * The index page as this listener serves it: the dev login announced in a meta tag when it is on (`/v1/config` keeps
 * only names); under a host's prefix, the files it loads named under the prefix and the prefix announced, since the
 * built console names `/console/...`; the host's own sign-in announced when the host authenticates its users.
 */
export const consoleIndex = (
  files: ConsoleFiles,
  options: { readonly devAuth: boolean; readonly prefix?: string; readonly hostSignIn?: boolean }
): string => {
  const prefix = options.prefix ?? ""
  const metas = [
    ...(options.devAuth ? ['<meta name="hostplane-dev-login" content="on" />'] : []),
    ...(prefix === "" ? [] : [`<meta name="hostplane-base" content="${escapeAttribute(prefix)}" />`]),
    ...(options.hostSignIn === true ? ['<meta name="hostplane-host-login" content="on" />'] : [])
  ]
  const located =
    prefix === ""
      ? files.index
      : files.index.replace(
          /(src|href)="\/console\//g,
          (_, attribute: string) => `${attribute}="${escapeAttribute(prefix)}/console/`
        )
  return metas.length === 0 ? located : located.replace("<head>", `<head>\n    ${metas.join("\n    ")}`)
}

/** The index page of this listener's console: its settings, the host's prefix and sign-in read from the context. */
export const consoleIndexOf = (files: ConsoleFiles) =>
  Effect.gen(function* () {
    const { devAuth } = yield* Identity.IdentityConfig
    const prefix = yield* MountPrefix
    const hostSignIn = (yield* HostAuthenticator).enabled
    return consoleIndex(files, { devAuth, prefix, hostSignIn })
  })

/** The index page's response: never cached, since it names the current hashed files. */
export const consoleIndexResponse = (html: string) =>
  HttpServerResponse.text(html, {
    contentType: "text/html; charset=utf-8",
    headers: { ...consoleSecurityHeaders, "cache-control": "no-cache" }
  })

/**
 * `GET /` and the console's URLs answer its index; `GET /console/<file>` its hashed files, cached for a year
 * (`immutable`: a new build has new names). Nothing is registered when no console is provided; the invitation page
 * (`/invites/:token`) is registered by the invite page's own layer, which answers the console when there is one.
 */
export const consolePages = Layer.unwrap(
  Effect.gen(function* () {
    const files = yield* Console
    if (files === undefined) return Layer.empty
    const index = consoleIndexResponse(yield* consoleIndexOf(files))
    return HttpRouter.use((router) =>
      Effect.gen(function* () {
        for (const path of consolePaths) {
          if (path !== "/invites/:token") yield* router.add("GET", path, Effect.succeed(index))
        }
        yield* router.add(
          "GET",
          "/console/*",
          Effect.gen(function* () {
            const params = yield* HttpRouter.params
            // `/console/` itself (an address a host may link to) is the console; it moves on to its home page.
            if ((params["*"] ?? "") === "") return index
            const file = files.files.get(params["*"] ?? "")
            if (file === undefined) {
              return HttpServerResponse.text("not found", { status: 404, headers: consoleSecurityHeaders })
            }
            return HttpServerResponse.uint8Array(file.body, {
              contentType: file.contentType,
              headers: { ...consoleSecurityHeaders, "cache-control": "public, max-age=31536000, immutable" }
            })
          })
        )
      })
    )
  })
)
