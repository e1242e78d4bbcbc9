import { Identity, Kernel, Orgs } from "@hostplane/core"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Console, consoleIndexOf, consoleIndexResponse } from "../console/ConsolePages.ts"

/** The route of the invitation link of decisions.md part 4 (`<public url>/invites/<token>`). */
export const invitePagePath = "/invites/:token"

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

/** JSON for a `<script type="application/json">` block: nothing in it can close the element or open a comment. */
const scriptJson = (value: unknown): string =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026")

const style = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
main{max-width:32rem;margin:4rem auto;padding:2rem;background:#fff;border:1px solid #d8dde3;border-radius:8px}
h1{font-size:1.4rem;margin:0 0 1rem}
dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem;margin:0 0 1.5rem}
dt{color:#57606a}dd{margin:0}
button,.button{font:inherit;padding:.5rem 1rem;border-radius:6px;border:1px solid #1f6feb;background:#1f6feb;color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
button.secondary{background:#fff;color:#1f6feb}
input{font:inherit;padding:.4rem;border:1px solid #d8dde3;border-radius:6px}
form{display:flex;gap:.5rem;margin-top:1rem}
[hidden]{display:none}
#status{margin-top:1rem}
.error{color:#b42318}
`

/** Reads a session from the OAuth fragment (then removes it) or session storage; accepts with it. */
const script = `
const data = JSON.parse(document.getElementById("invite-data").textContent);
const storageKey = "hostplane.session";
const status = document.getElementById("status");
const say = (text, isError) => { status.textContent = text; status.className = isError ? "error" : ""; };
const fragment = new URLSearchParams(location.hash.slice(1));
if (fragment.has("token")) {
  sessionStorage.setItem(storageKey, JSON.stringify({ token: fragment.get("token"), expiresAt: fragment.get("expiresAt") }));
} else if (fragment.has("error")) {
  say("Sign-in failed: " + (fragment.get("message") || fragment.get("error")), true);
}
if (location.hash !== "") history.replaceState(null, "", location.pathname + location.search);
const session = () => {
  try {
    const stored = JSON.parse(sessionStorage.getItem(storageKey) || "null");
    return stored && typeof stored.token === "string" && new Date(stored.expiresAt) > new Date() ? stored.token : null;
  } catch { return null; }
};
const show = () => {
  const signedIn = session() !== null;
  document.getElementById("accept").hidden = !signedIn || data.state !== "pending";
  document.getElementById("sign-out").hidden = !signedIn;
  document.getElementById("sign-in").hidden = signedIn || data.state !== "pending";
};
document.getElementById("accept").addEventListener("click", async () => {
  say("Accepting...");
  const reply = await fetch("/v1/invites/" + encodeURIComponent(data.token) + "/accept", {
    method: "POST", headers: { authorization: "Bearer " + session() }
  });
  const body = await reply.json().catch(() => ({}));
  if (reply.ok) {
    data.state = "accepted"; show();
    document.getElementById("state").textContent = "Accepted";
    say(body.alreadyMember
      ? "You were already a member of " + body.org.name + " (role " + body.org.role + ")."
      : "You joined " + body.org.name + " as " + body.org.role + ".");
  } else if (reply.status === 401) {
    sessionStorage.removeItem(storageKey); show(); say("Your session ended: sign in again.", true);
  } else {
    say(body.message || ("The invitation could not be accepted (" + reply.status + ")."), true);
  }
});
document.getElementById("sign-out").addEventListener("click", () => { sessionStorage.removeItem(storageKey); show(); say(""); });
const dev = document.getElementById("dev-sign-in");
if (dev !== null) dev.addEventListener("submit", async (event) => {
  event.preventDefault();
  const reply = await fetch("/v1/auth/dev/login", {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ subject: new FormData(dev).get("subject") })
  });
  const body = await reply.json().catch(() => ({}));
  if (!reply.ok) return say(body.message || "Sign-in failed.", true);
  sessionStorage.setItem(storageKey, JSON.stringify({ token: body.token, expiresAt: body.expiresAt }));
  show(); say("");
});
show();
`

const stateText: Record<Orgs.InviteView["state"], string> = {
  pending: "Waiting for you to accept",
  accepted: "Already accepted",
  revoked: "Revoked by an admin of the organization",
  expired: "Expired: ask an admin for a new invitation"
}

const headers = (nonce: string) => ({
  "content-security-policy": [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'"
  ].join("; "),
  // The path holds the invite token: no other site may see it, and no cache may keep the page.
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY"
})

const page = (nonce: string, title: string, body: string, status: number) =>
  HttpServerResponse.text(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${style}</style></head>
<body><main>${body}</main></body></html>`,
    { status, headers: headers(nonce), contentType: "text/html; charset=utf-8" }
  )

/**
 * `GET /invites/{token}`: the page the invitation email links to. It shows the invite (`GET /v1/invites/{token}`) and
 * lets a signed-in user accept it: the session comes from the OAuth fragment (sign-in returns to this page) or from
 * session storage, and the dev login when it is on. When the listener serves the web console, the link opens the
 * console's invitation page instead. Self-contained (no CDN), under a nonce CSP; an unknown token is 404.
 */
export const invitePage = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const invites = yield* Orgs.Invites
    const settings = yield* Kernel.Settings
    const { devAuth } = yield* Identity.IdentityConfig
    const signInOffered = (yield* Identity.IdentityProvider).enabled
    const console = yield* Console
    if (console !== undefined) {
      const index = consoleIndexResponse(yield* consoleIndexOf(console))
      return yield* router.add("GET", invitePagePath, Effect.succeed(index))
    }
    yield* router.add(
      "GET",
      invitePagePath,
      Effect.gen(function* () {
        const { token } = yield* HttpRouter.params
        const nonce = globalThis.crypto.randomUUID().replace(/-/g, "")
        const found = yield* Effect.option(invites.view(token ?? ""))
        const product = escapeHtml(settings.productName)
        if (Option.isNone(found)) {
          return page(
            nonce,
            `Invitation not found - ${settings.productName}`,
            `<h1>Invitation not found</h1><p>This link is not a ${product} invitation, or it was replaced by a newer one. Ask an admin of the organization to invite you again.</p>`,
            404
          )
        }
        const invite = found.value
        const here = `${settings.publicUrl}/invites/${encodeURIComponent(token ?? "")}`
        const signIn = signInOffered
          ? `<a class="button" href="/v1/auth/idp/start?redirect=${escapeHtml(encodeURIComponent(here))}">Sign in to accept</a>`
          : devAuth
            ? ""
            : "<p>Sign-in is not configured on this server.</p>"
        const devSignIn = devAuth
          ? `<form id="dev-sign-in"><input name="subject" required placeholder="dev subject" aria-label="dev subject"><button class="secondary">Dev sign-in</button></form>`
          : ""
        const body = `<h1>Join ${escapeHtml(invite.orgName)} on ${product}</h1>
<dl><dt>Organization</dt><dd>${escapeHtml(invite.orgName)} (${escapeHtml(invite.orgSlug)})</dd>
<dt>Role</dt><dd>${escapeHtml(invite.role)}</dd>
<dt>State</dt><dd id="state">${escapeHtml(stateText[invite.state])}</dd>
<dt>Expires</dt><dd>${escapeHtml(invite.expiresAt)}</dd></dl>
<button id="accept" hidden>Accept invitation</button>
<div id="sign-in" hidden>${signIn}${devSignIn}</div>
<button id="sign-out" class="secondary" hidden>Sign out</button>
<p id="status" role="status"></p>
<script type="application/json" id="invite-data">${scriptJson({ token, state: invite.state })}</script>
<script nonce="${nonce}">${script}</script>`
        return page(nonce, `Join ${invite.orgName} - ${settings.productName}`, body, 200)
      })
    )
  })
)
