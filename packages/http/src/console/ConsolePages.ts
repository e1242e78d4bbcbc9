import { Identity } from "@hostplane/core"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"

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

/** The index page, with the dev login announced in a meta tag when it is on (`/v1/config` keeps only names). */
export const consoleIndex = (files: ConsoleFiles, devAuth: boolean): string =>
  devAuth ? files.index.replace("<head>", `<head>\n    <meta name="hostplane-dev-login" content="on" />`) : files.index

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
    const { devAuth } = yield* Identity.IdentityConfig
    const index = consoleIndexResponse(consoleIndex(files, devAuth))
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
