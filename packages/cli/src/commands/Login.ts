import type { Client } from "@hostplane/client"
import { Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { CliFailure, note, show } from "../Output.ts"
import { makeClient } from "../ApiClient.ts"
import { anonymous, resolveUrl, root, session } from "../Root.ts"
import { CliEnv, readCredentials, removeCredentials, writeCredentials } from "../Settings.ts"
import { launchBrowser } from "../Browser.ts"
import { readSecretInput } from "./Input.ts"

/** Checks the token against `/v1/me` before anything is stored, then keeps it for this server. */
const store = (url: string, token: string, expiresAt: string | null) =>
  Effect.gen(function* () {
    const { json } = yield* root
    const env = yield* CliEnv
    const api: Client = yield* makeClient({ baseUrl: url, token })
    const me = yield* api.identity.me()
    const file = yield* writeCredentials(env.configDir, { url, token, subject: me.user.subject, expiresAt })
    yield* show(json, { url, user: me.user, orgs: me.orgs.map((org) => org.slug) }, () => [
      `signed in to ${url} as ${me.user.subject} (${me.user.provider}); token stored in ${file}`
    ])
  })

/** The local page the browser lands on: it reads the fragment (never sent to any server) and hands it to the CLI. */
const landingPage = (postPath: string) => `<!doctype html>
<meta charset="utf-8"><title>hostplane sign-in</title>
<p id="status">Finishing sign-in...</p>
<script>
const fragment = location.hash.slice(1)
history.replaceState(null, "", location.pathname)
fetch(${JSON.stringify(postPath)}, { method: "POST", headers: { "content-type": "text/plain" }, body: fragment })
  .then((reply) => reply.text())
  .then((text) => { document.getElementById("status").textContent = text })
  .catch(() => { document.getElementById("status").textContent = "The hostplane CLI is no longer waiting." })
</script>
`

interface Fragment {
  readonly token?: string | undefined
  readonly expiresAt?: string | undefined
  readonly error?: string | undefined
  readonly message?: string | undefined
}

/**
 * RFC 8252 sign-in: a one-shot listener on a loopback port with a random path is the OAuth `redirect`; the browser
 * posts the fragment back from that page (same origin, checked), then the listener closes.
 */
const browserLogin = (url: string, openBrowser: boolean) =>
  Effect.gen(function* () {
    const nonce = randomBytes(24).toString("base64url")
    const path = `/callback/${nonce}`
    let deliver: (fragment: Fragment) => void = () => {}
    const received = new Promise<Fragment>((resolve) => (deliver = resolve))
    const server = Http.createServer((request, response) => {
      const headers = {
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff"
      }
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      if (request.url === path && request.method === "GET") {
        response.writeHead(200, {
          ...headers,
          "content-type": "text/html; charset=utf-8",
          "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; connect-src 'self'"
        })
        return void response.end(landingPage(path))
      }
      if (request.url === path && request.method === "POST" && request.headers.origin === origin) {
        let body = ""
        request.setEncoding("utf8")
        request.on("data", (chunk: string) => (body = (body + chunk).slice(0, 16_384)))
        request.on("end", () => {
          const values = Object.fromEntries(new URLSearchParams(body))
          const ok = typeof values["token"] === "string" && values["token"] !== ""
          response.writeHead(ok ? 200 : 400, { ...headers, "content-type": "text/plain; charset=utf-8" })
          response.end(
            ok
              ? "Signed in. You can close this tab and return to the terminal."
              : `Sign-in failed: ${values["message"] ?? values["error"] ?? "no token"}`
          )
          deliver(values)
        })
        return
      }
      response.writeHead(404, headers)
      response.end()
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
      () =>
        Effect.sync(() => {
          server.closeAllConnections()
          server.close()
        })
    )
    const redirect = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`
    const start = `${url}/v1/auth/idp/start?redirect=${encodeURIComponent(redirect)}`
    yield* note(`Open this address in a browser to sign in:\n\n  ${start}\n\nWaiting for the browser...`)
    if (openBrowser) yield* launchBrowser(start)
    const fragment = yield* Effect.promise(() => received).pipe(
      Effect.timeoutOrElse({
        duration: "10 minutes",
        orElse: () =>
          Effect.fail(new CliFailure({ code: "login_timeout", message: "no sign-in arrived within 10 minutes" }))
      })
    )
    if (fragment.token === undefined || fragment.token === "") {
      return yield* new CliFailure({
        code: fragment.error ?? "login_failed",
        message: fragment.message ?? "the sign-in returned no token"
      })
    }
    return { token: fragment.token, expiresAt: fragment.expiresAt ?? null }
  }).pipe(Effect.scoped)

export const login = Command.make(
  "login",
  {
    token: Flag.String("token").pipe(
      Flag.withDescription("Store this personal access token (`-` reads it from stdin) instead of signing in"),
      Flag.optional
    ),
    dev: Flag.String("dev").pipe(
      Flag.withDescription("Sign in with the dev login of an embedded server as this subject"),
      Flag.optional
    ),
    browser: Flag.Boolean("browser").pipe(
      Flag.withDescription("Open the sign-in page in the browser (--no-browser only prints its address)"),
      Flag.withDefault(true)
    )
  },
  Effect.fn("login")(function* ({ token, dev, browser }) {
    const flags = yield* root
    const url = yield* resolveUrl(flags)
    if (Option.isSome(token)) {
      const value = token.value === "-" ? yield* readSecretInput("token") : token.value
      return yield* store(url, value.trim(), null)
    }
    if (Option.isSome(dev)) {
      const api = yield* anonymous(url)
      const { body } = yield* api.devAuth.login({ payload: { subject: dev.value } })
      return yield* store(url, body.token, body.expiresAt)
    }
    const signedIn = yield* browserLogin(url, browser)
    return yield* store(url, signedIn.token, signedIn.expiresAt)
  })
).pipe(
  Command.withDescription(
    "Sign in: through the browser (OAuth with a loopback redirect), with --token for CI, or --dev <subject> on an embedded server"
  ),
  Command.withExamples([
    { command: "hostplane login", description: "Sign in through the browser" },
    { command: "hostplane login --dev you", description: "Dev login on a local `npm start` server" },
    { command: "echo $PAT | hostplane login --token -", description: "Store a personal access token" }
  ])
)

export const logout = Command.make(
  "logout",
  {},
  Effect.fn("logout")(function* () {
    const { json } = yield* root
    const env = yield* CliEnv
    const stored = yield* readCredentials(env.configDir)
    const removed = yield* removeCredentials(env.configDir)
    yield* show(json, { loggedOut: removed, url: Option.getOrNull(Option.map(stored, (c) => c.url)) }, () => [
      removed ? "signed out: the stored token is removed" : "not signed in"
    ])
  })
).pipe(Command.withDescription("Forget the stored token"))

export const whoami = Command.make(
  "whoami",
  {},
  Effect.fn("whoami")(function* () {
    const flags = yield* root
    const { api, url } = yield* session(flags)
    const me = yield* api.identity.me()
    yield* show(flags.json, { url, ...me }, () => [
      `${me.user.subject} (${me.user.provider}, ${me.user.id}) on ${url}`,
      ...me.orgs.map((org) => `  ${org.slug}  ${org.role}${org.personal ? "  personal" : ""}`)
    ])
  })
).pipe(Command.withDescription("Show who the stored token signs in as, and their orgs"))
